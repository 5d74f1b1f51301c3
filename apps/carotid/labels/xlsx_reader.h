#pragma once
// Cell values of an .xlsx workbook, as the label reader needs them: what each
// cell shows (its value, or a formula's cached result), not how it looks.
// The type is shared with .csv files, so the rules for ids and labels live in
// one place (label_sheet.cpp).
#include <cstdint>
#include <string>
#include <vector>

namespace carotid {

struct Cell {
  enum class Kind { empty, number, text, error };
  Kind kind = Kind::empty;
  double number = 0;  // Kind::number; booleans are read as 1 and 0
  // Kind::text, or the error a formula shows for Kind::error ("#N/A"). Dates
  // stored as dates are ISO text; dates stored as numbers (the usual way) are
  // numbers, the day count Excel shows them by.
  std::string text;

  bool empty() const { return kind == Kind::empty; }
};

struct SheetCells {
  std::string name;
  // rows[r][c] is the cell at 0-based row r, column c (spreadsheet row r + 1,
  // column "A" + c). Rows may be shorter than the widest one: missing cells
  // are empty.
  std::vector<std::vector<Cell>> rows;
};

// Every sheet of an .xlsx workbook, in the workbook's order (hidden ones
// too). Throws tandem::UsageError naming the file when it is missing or not a
// readable .xlsx file, with the reason.
std::vector<SheetCells> read_xlsx(const std::string& path);

// "A", "B", ..., "Z", "AA": the column letters a spreadsheet shows for a
// 0-based column index, for messages.
std::string column_letters(size_t column);

}  // namespace carotid
