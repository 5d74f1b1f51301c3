#include "labels/label_sheet.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "labels/xlsx_reader.h"
#include "tandem/data/csv.h"
#include "tandem/error.h"
#include "tandem/text/message_text.h"

namespace carotid {
namespace {

using tandem::UsageError;

// Integer labels are class indices; one this large means the label setting
// names the wrong column (ids, ages, dates), and would make a model with that
// many outputs.
constexpr int64_t kMaxIntegerLabel = 999;

bool is_space(unsigned char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }

// Trims ASCII spaces and no-break spaces (U+00A0, which spreadsheets pick up
// from pasted web pages and which no one can see).
std::string trim(const std::string& text) {
  size_t begin = 0, end = text.size();
  for (;;) {
    if (begin < end && is_space(text[begin])) {
      ++begin;
    } else if (begin + 1 < end && text.compare(begin, 2, "\xC2\xA0") == 0) {
      begin += 2;
    } else {
      break;
    }
  }
  for (;;) {
    if (end > begin && is_space(text[end - 1])) {
      --end;
    } else if (end >= begin + 2 && text.compare(end - 2, 2, "\xC2\xA0") == 0) {
      end -= 2;
    } else {
      break;
    }
  }
  return text.substr(begin, end - begin);
}

// "12", "-3", "12.0", "12." : a whole number in decimal; `digits` gets the
// part before any fraction (with its sign).
bool whole_number_text(const std::string& text, std::string& digits) {
  size_t i = (!text.empty() && text[0] == '-') ? 1 : 0;
  const size_t start = i;
  while (i < text.size() && text[i] >= '0' && text[i] <= '9') ++i;
  if (i == start) return false;
  const size_t int_end = i;
  if (i < text.size() && text[i] == '.') {
    ++i;
    while (i < text.size() && text[i] == '0') ++i;
  }
  if (i != text.size()) return false;
  digits = text.substr(0, int_end);
  return true;
}

std::string lowercase(std::string text) {
  for (char& c : text)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  return text;
}

std::string quoted_list(const std::vector<std::string>& names) {
  std::vector<std::string> quoted;
  for (const auto& name : names) quoted.push_back("'" + name + "'");
  return tandem::first_few(quoted, 20);
}

// A sheet reduced to what the label reader needs, from either format.
struct Table {
  std::string sheet;                // the sheet's name; "" for .csv
  std::string where;                // "sheet 'labels'" or "" for .csv
  std::vector<std::string> header;  // per column, trimmed ("" for an empty header cell)
  std::vector<std::vector<Cell>> rows;
  std::vector<int64_t> row_numbers;  // 1-based row (xlsx) or line (csv)
  bool spreadsheet = true;
};

std::string cell_text(const Cell& cell) {
  switch (cell.kind) {
    case Cell::Kind::number:
      return cell_number_text(cell.number);
    case Cell::Kind::text:
      return trim(cell.text);
    case Cell::Kind::error:
      return cell.text;
    case Cell::Kind::empty:
      break;
  }
  return "";
}

bool blank(const Cell& cell) {
  return cell.kind == Cell::Kind::empty || (cell.kind == Cell::Kind::text && trim(cell.text).empty());
}

Table xlsx_table(const std::string& path, const LabelSheetOptions& options) {
  std::vector<SheetCells> sheets = read_xlsx(path);
  if (sheets.empty()) throw UsageError(path + ": the workbook has no sheets");
  size_t chosen = 0;
  if (!options.sheet.empty()) {
    std::vector<std::string> names;
    chosen = sheets.size();
    for (size_t i = 0; i < sheets.size(); ++i) {
      names.push_back(sheets[i].name);
      if (sheets[i].name == options.sheet) chosen = i;
    }
    if (chosen == sheets.size())
      throw UsageError(path + ": no sheet named '" + options.sheet + "' (set " + options.sheet_key +
                       "; empty reads the first sheet); sheets: " + quoted_list(names));
  }
  SheetCells& sheet = sheets[chosen];
  Table table;
  table.sheet = sheet.name;
  table.where = "sheet '" + sheet.name + "'";
  size_t r = 0;
  auto row_blank = [&](size_t i) { return std::all_of(sheet.rows[i].begin(), sheet.rows[i].end(), blank); };
  while (r < sheet.rows.size() && row_blank(r)) ++r;
  if (r == sheet.rows.size())
    throw UsageError(path + ": " + table.where + " is empty (set " + options.sheet_key +
                     " to the sheet with the labels)");
  for (const Cell& cell : sheet.rows[r]) table.header.push_back(cell_text(cell));
  for (++r; r < sheet.rows.size(); ++r) {
    table.rows.push_back(std::move(sheet.rows[r]));
    table.row_numbers.push_back(static_cast<int64_t>(r) + 1);
  }
  return table;
}

Table csv_table(const std::string& path) {
  tandem::CsvTable csv = tandem::read_csv(path);
  Table table;
  table.spreadsheet = false;
  for (const auto& name : csv.header) table.header.push_back(trim(name));
  for (size_t r = 0; r < csv.rows.size(); ++r) {
    std::vector<Cell> row;
    for (auto& field : csv.rows[r]) {
      Cell cell;
      if (!trim(field).empty()) {
        cell.kind = Cell::Kind::text;
        cell.text = std::move(field);
      }
      row.push_back(std::move(cell));
    }
    table.rows.push_back(std::move(row));
    table.row_numbers.push_back(csv.lines[r]);
  }
  return table;
}

// "'Label' (B)" in a spreadsheet, "'Label'" in a CSV file.
std::string column_name_for_message(const Table& table, size_t column) {
  if (!table.spreadsheet) return "'" + table.header[column] + "'";
  return "'" + table.header[column] + "' (" + column_letters(column) + ")";
}

// The index of the column headed `name`, or a UsageError listing the headers.
size_t find_column(const std::string& path, const Table& table, const std::string& name, const std::string& key) {
  std::vector<size_t> found;
  std::vector<std::string> names;
  for (size_t c = 0; c < table.header.size(); ++c) {
    if (!table.header[c].empty()) names.push_back(table.header[c]);
    if (table.header[c] == name) found.push_back(c);
  }
  const std::string in = table.where.empty() ? "" : " in " + table.where;
  if (found.empty()) {
    std::string hint;
    for (const auto& candidate : names)
      if (lowercase(candidate) == lowercase(name)) hint = " (did you mean '" + candidate + "'?)";
    throw UsageError(path + ": no column '" + name + "'" + in + hint + " (set " + key +
                     "); columns: " + quoted_list(names));
  }
  if (found.size() > 1)
    throw UsageError(path + ": the header" + in + " has two columns named '" + name + "' (columns " +
                     column_letters(found[0]) + " and " + column_letters(found[1]) + "); rename one");
  return found[0];
}

// The first column with a header that is not `other`.
size_t first_column_except(const std::string& path, const Table& table, size_t other, const std::string& key) {
  for (size_t c = 0; c < table.header.size(); ++c)
    if (!table.header[c].empty() && c != other) return c;
  const std::string in = table.where.empty() ? "" : " in " + table.where;
  throw UsageError(path + ": the header" + in + " needs two named columns, the person id and the label (set " + key +
                   ")");
}

struct RawLabel {
  bool integer = false;
  int64_t value = 0;
  std::string text;  // the label as written, for class names
};

RawLabel raw_label(const Cell& cell) {
  RawLabel label;
  label.text = cell_text(cell);
  if (cell.kind == Cell::Kind::number) {
    if (std::isfinite(cell.number) && cell.number == std::floor(cell.number) && std::fabs(cell.number) < 9.0e15) {
      label.integer = true;
      label.value = static_cast<int64_t>(cell.number);
    }
    return label;
  }
  std::string digits;
  if (whole_number_text(label.text, digits)) {
    const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), label.value);
    label.integer = ec == std::errc() && end == digits.data() + digits.size();
  }
  if (label.integer) label.text = std::to_string(label.value);  // "1.0" names the class "1"
  return label;
}

std::string rows_list(const std::vector<int64_t>& rows) {
  std::string out;
  for (size_t i = 0; i < rows.size(); ++i) {
    if (i) out += i + 1 == rows.size() ? " and " : ", ";
    out += std::to_string(rows[i]);
  }
  return out;
}

Table read_table(const std::string& path, const LabelSheetOptions& options) {
  const std::string extension = lowercase(std::filesystem::path(path).extension().string());
  if (extension == ".xlsx" || extension == ".xlsm") return xlsx_table(path, options);
  if (extension == ".csv") return csv_table(path);
  throw UsageError(path + ": a label sheet must be an .xlsx or .csv file");
}

// A sheet being read: where its ids and labels are, and how its messages
// name a row.
struct SheetReader {
  const std::string& path;
  const LabelSheetOptions& options;
  const Table& table;
  size_t id_col = 0, label_col = 0;
  std::string row_word;     // "row" in a spreadsheet, "line" in a CSV
  std::string label_where;  // "column C ('label')"

  SheetReader(const std::string& p, const LabelSheetOptions& o, const Table& t) : path(p), options(o), table(t) {
    constexpr size_t kNone = static_cast<size_t>(-1);
    id_col = options.id_column.empty() ? kNone : find_column(path, table, options.id_column, options.id_key);
    label_col =
        options.label_column.empty() ? kNone : find_column(path, table, options.label_column, options.label_key);
    if (id_col == kNone) id_col = first_column_except(path, table, label_col, options.id_key);
    if (label_col == kNone) label_col = first_column_except(path, table, id_col, options.label_key);
    if (id_col == label_col)
      throw UsageError(path + ": " + options.id_key + " and " + options.label_key + " both name column '" +
                       table.header[id_col] + "'");
    row_word = table.spreadsheet ? "row" : "line";
    label_where = "column " + column_name_for_message(table, label_col);
  }

  std::string at(int64_t row_number) const { return path + ": " + row_word + " " + std::to_string(row_number) + ": "; }

  // Each person's first row into sheet.ids/rows and `raw`; every row of each
  // person into `rows_of`. Rows without an id are skipped (and counted when
  // not blank).
  void read_rows(LabelSheet& sheet, std::vector<RawLabel>& raw,
                 std::unordered_map<std::string, std::vector<int64_t>>& rows_of) const {
    static const Cell kEmpty;
    for (size_t r = 0; r < table.rows.size(); ++r) {
      const auto& row = table.rows[r];
      const int64_t number = table.row_numbers[r];
      const Cell& id_cell = id_col < row.size() ? row[id_col] : kEmpty;
      const Cell& label_cell = label_col < row.size() ? row[label_col] : kEmpty;
      if (id_cell.kind == Cell::Kind::error)
        throw UsageError(at(number) + "the person id shows the error " + id_cell.text);
      const std::string id =
          id_cell.kind == Cell::Kind::number ? cell_number_text(id_cell.number) : normalize_id_text(id_cell.text);
      if (id.empty()) {
        if (!std::all_of(row.begin(), row.end(), blank)) ++sheet.skipped_rows;
        continue;
      }
      if (blank(label_cell)) throw UsageError(at(number) + "person " + id + " has no label in " + label_where);
      if (label_cell.kind == Cell::Kind::error)
        throw UsageError(at(number) + "the label of person " + id + " shows the error " + label_cell.text);
      auto& seen = rows_of[id];
      seen.push_back(number);
      if (seen.size() > 1) continue;
      sheet.ids.push_back(id);
      sheet.rows.push_back(number);
      raw.push_back(raw_label(label_cell));
    }
  }

  // A person given twice may have two labels; which one is right is for the
  // user to say, so it stops the run, naming every row of the first such one.
  void refuse_repeats(const LabelSheet& sheet,
                      const std::unordered_map<std::string, std::vector<int64_t>>& rows_of) const {
    std::vector<std::string> repeated;
    for (const auto& id : sheet.ids)
      if (rows_of.at(id).size() > 1) repeated.push_back(id);
    if (repeated.empty()) return;
    std::string message =
        path + ": person " + repeated[0] + " appears in " + row_word + "s " + rows_list(rows_of.at(repeated[0]));
    const size_t more = repeated.size() - 1;
    if (more > 0)
      message +=
          "; " + std::to_string(more) + (more == 1 ? " more person appears" : " more persons appear") +
          " more than once: " + tandem::first_few(std::vector<std::string>(repeated.begin() + 1, repeated.end()));
    throw UsageError(message);
  }

  // Labels that are all whole numbers are class numbers 0..largest; any
  // other labels are class names, numbered in sorted order.
  void assign_classes(LabelSheet& sheet, const std::vector<RawLabel>& raw) const {
    const bool all_integers = std::all_of(raw.begin(), raw.end(), [](const RawLabel& l) { return l.integer; });
    if (!all_integers) {
      std::set<std::string> names;
      for (const auto& label : raw) names.insert(label.text);
      sheet.class_names.assign(names.begin(), names.end());
      sheet.named_classes = true;
      for (const auto& label : raw)
        sheet.labels.push_back(std::lower_bound(sheet.class_names.begin(), sheet.class_names.end(), label.text) -
                               sheet.class_names.begin());
      return;
    }
    int64_t largest = 0;
    for (size_t i = 0; i < raw.size(); ++i) {
      if (raw[i].value < 0)
        throw UsageError(at(sheet.rows[i]) + "label " + std::to_string(raw[i].value) + " of person " + sheet.ids[i] +
                         " is negative; labels are class numbers from 0, or class names");
      if (raw[i].value > kMaxIntegerLabel)
        throw UsageError(at(sheet.rows[i]) + "label " + std::to_string(raw[i].value) + " of person " + sheet.ids[i] +
                         " is not a class number (0 to " + std::to_string(kMaxIntegerLabel) + "); " +
                         options.label_key + " chose " + label_where + ": is that the label column?");
      largest = std::max(largest, raw[i].value);
      sheet.labels.push_back(raw[i].value);
    }
    for (int64_t k = 0; k <= largest; ++k) sheet.class_names.push_back(std::to_string(k));
  }
};

}  // namespace

std::string cell_number_text(double value) {
  if (value == 0) return "0";  // also -0
  if (std::isfinite(value) && value == std::floor(value) && std::fabs(value) < 9.0e15)
    return std::to_string(static_cast<int64_t>(value));
  char buffer[64];
  const auto result = std::to_chars(buffer, buffer + sizeof buffer, value);  // shortest exact
  return std::string(buffer, result.ptr);
}

std::string normalize_id_text(const std::string& text) {
  std::string trimmed = trim(text);
  std::string digits;
  if (trimmed.find('.') != std::string::npos && whole_number_text(trimmed, digits)) return digits;
  return trimmed;
}

LabelSheet read_label_sheet(const std::string& path, const LabelSheetOptions& options) {
  const Table table = read_table(path, options);
  const SheetReader reader(path, options, table);
  LabelSheet sheet;
  sheet.path = path;
  sheet.sheet = table.sheet;
  sheet.id_column = table.header[reader.id_col];
  sheet.label_column = table.header[reader.label_col];
  std::vector<RawLabel> raw;
  std::unordered_map<std::string, std::vector<int64_t>> rows_of;
  reader.read_rows(sheet, raw, rows_of);
  reader.refuse_repeats(sheet, rows_of);
  if (sheet.ids.empty())
    throw UsageError(path + ": " + (table.where.empty() ? "" : table.where + ": ") +
                     "no row below the header has a person id (column " +
                     column_name_for_message(table, reader.id_col) + ")");
  reader.assign_classes(sheet, raw);
  return sheet;
}

}  // namespace carotid
