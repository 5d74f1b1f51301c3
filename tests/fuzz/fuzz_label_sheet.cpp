// The label sheet reader (carotid's labels/label_sheet.h) on .xlsx bytes (a
// zip of XML read by liborcus) and on .csv bytes: the first input byte picks
// which. Any file makes persons and labels or a UsageError.
#include "fuzz_input.h"
#include "labels/label_sheet.h"
#include "labels/xlsx_reader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace tandem;
  if (size == 0) return 0;
  const bool xlsx = data[0] & 1;
  const std::string path = fuzz::write_input(data + 1, size - 1, xlsx ? "labels.xlsx" : "labels.csv");
  if (xlsx) fuzz::expect_clean([&] { carotid::read_xlsx(path); });
  fuzz::expect_clean([&] { carotid::read_label_sheet(path); });
  return 0;
}
