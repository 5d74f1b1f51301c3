// The CSV reader (data/csv.h), strict and with skip_bad_rows: any bytes make a
// table or a UsageError, and a table written back with write_csv reads back
// as the same table.
#include "fuzz_input.h"
#include "tandem/data/csv.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace tandem;
  const std::string path = fuzz::write_input(data, size, "input.csv");
  for (bool skip_bad_rows : {false, true}) {
    fuzz::expect_clean([&] {
      const CsvTable table = read_csv(path, CsvOptions{skip_bad_rows});
      const std::string copy = fuzz::scratch_path("copy.csv");
      write_csv(copy, table.header, table.rows);
      const CsvTable again = read_csv(copy);
      if (again.header != table.header || again.rows != table.rows)
        fuzz::fail("write_csv then read_csv changed the table of " + path);
    });
  }
  return 0;
}
