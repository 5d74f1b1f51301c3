#pragma once
// Who is who: the label of each person, from the sheet the user keeps them
// in (label.xlsx as the hospital gives it, or a .csv). Everything a person
// can get wrong in such a sheet stops the run here, with a message naming the
// file, the row and the setting to change, before any image is read.
#include <cstdint>
#include <string>
#include <vector>

namespace carotid {

struct LabelSheetOptions {
  std::string sheet;         // .xlsx: the sheet's name; empty = the first sheet
  std::string id_column;     // header of the person column; empty = the first column
  std::string label_column;  // header of the label column; empty = the first other column
  // The settings the three come from, named in messages ("set data.id_column").
  std::string sheet_key = "data.label_sheet";
  std::string id_key = "data.id_column";
  std::string label_key = "data.label_column";
};

struct LabelSheet {
  std::string path;
  std::string sheet;      // the sheet read; empty for .csv
  std::string id_column;  // the header names used
  std::string label_column;
  std::vector<std::string> ids;  // normalised (see normalize_id), each once, sheet order
  std::vector<int64_t> labels;   // 0..num_classes()-1
  std::vector<int64_t> rows;     // where each person is: spreadsheet row / CSV line (1-based)
  // Label k's name. Labels given as class names ("benign", "malignant") are
  // numbered in sorted (byte) order; integer labels are used as they are and
  // named by their digits ("0", "1", ...), up to the largest. Saved beside a
  // model, so that predictions can be named and a later run maps alike.
  std::vector<std::string> class_names;
  bool named_classes = false;  // labels were class names, not integers
  int64_t skipped_rows = 0;    // rows with an empty person id (left out)

  int64_t num_classes() const { return static_cast<int64_t>(class_names.size()); }
  // "row" for .xlsx, "line" for .csv: what `rows` counts, for messages.
  const char* row_word() const { return sheet.empty() ? "line" : "row"; }
};

// Reads `path` by its extension: .xlsx (also .xlsm) or .csv (UTF-8, with a
// header row). In the sheet, the header is the first row that is not empty;
// cells are trimmed of surrounding spaces; rows with an empty id are skipped
// (counted in skipped_rows); ids are text or numbers, normalised so that 12,
// 12.0 and "12" are one person; labels are integers >= 0 (1 and 1.0 alike) or
// else class names. Throws tandem::UsageError naming the file (and the row)
// for: a missing or unreadable file; a missing sheet (listing the sheets) or
// column (listing the columns); a person without a label; a label that is
// negative, or an error such as #N/A; a person given twice ("label.xlsx:
// person 12 appears in rows 5 and 9"); no persons at all. For .csv, `sheet`
// is ignored.
LabelSheet read_label_sheet(const std::string& path, const LabelSheetOptions& options = {});

// A number cell as a person id or label: whole numbers become their digits
// (12.0 -> "12"), others their shortest exact decimal (12.5 -> "12.5"), so
// an id reads back as the folder name it matches (unlike tandem::number_text,
// which rounds for messages).
std::string cell_number_text(double value);
// The id text for a person as a cell gives it: numbers as cell_number_text;
// text is trimmed, and text that is a whole number written
// with a fraction of zeros loses it ("12.0" -> "12", as a CSV export of a
// numeric column writes it). Other text, leading zeros included, is kept as it
// is ("007" stays "007": it may be a folder's name).
std::string normalize_id_text(const std::string& text);

}  // namespace carotid
