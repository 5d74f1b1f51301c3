#pragma once
// CSV as RFC 4180 has it, for the files users bring (Kaggle train.csv whose
// fields hold commas, quotes and newlines; label sheets) and the files they
// hand in (submission.csv). Reading is strict by default: a malformed row
// stops the run with a message naming the file and line, since a silently
// misaligned column would train on garbage.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace tandem {

struct CsvOptions {
  // Rows with the wrong number of fields or a stray quote are counted in
  // CsvTable::skipped instead of stopping the read. A quoted field left open at
  // the end of the file is still an error: every row after its start is lost.
  bool skip_bad_rows = false;
  char delimiter = ',';  // ASCII, not '"', CR or LF
};

struct CsvTable {
  std::string path;
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> rows;  // each has header.size() fields
  std::vector<int64_t> lines;                  // 1-based line where each row starts
  int64_t skipped = 0;                         // rows dropped by skip_bad_rows
  std::string first_skipped;                   // why the first of them was dropped

  // Index of the column called `name`, or a UsageError listing the columns;
  // `key_hint` names the config key that chose `name`, so the message can say
  // what to change ("...; set data.text_column").
  size_t column(const std::string& name, const std::string& key_hint = "") const;
};

// Reads a whole file: UTF-8 (a BOM is dropped), a header row, then rows ended
// by LF or CRLF (a lone CR also ends a line); the last line end is optional.
// Line ends inside quoted fields are kept byte for byte. Blank lines between
// rows are skipped, as pandas does. Throws UsageError naming the file and line
// for a missing or empty file, invalid UTF-8 (with its byte offset), a
// duplicate column name, a quoted field never closed, a stray quote, or a row
// whose field count differs from the header's.
CsvTable read_csv(const std::string& path, const CsvOptions& options = {});

// Writes header and rows with LF line ends, quoting a field only where it must
// be: it holds a comma, quote, CR or LF, starts or ends with a space or tab,
// is the only field of an empty row (which would otherwise read as a blank
// line), or is the file's first and starts with a byte-order mark (which
// would otherwise be dropped). The bytes go to a hidden file beside `path` that is then renamed over
// it, so an existing file is never seen half-written. Every row must have
// header.size() fields (std::invalid_argument otherwise); I/O failures throw
// std::runtime_error naming the file.
void write_csv(const std::string& path, const std::vector<std::string>& header,
               const std::vector<std::vector<std::string>>& rows);

}  // namespace tandem
