#pragma once
// Writes .xlsx files for the tests with libxlsxwriter, so the label reader is
// tested on files a real writer made, not on XML we typed ourselves.
#include <xlsxwriter.h>

#include <stdexcept>
#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace carotid::testing {

struct Formula {  // a formula cell with the result Excel would have cached
  std::string formula;
  std::variant<double, std::string> result;
};
struct Boolean {
  bool value;
};
// std::monostate: leave the cell empty.
using XCell = std::variant<std::monostate, double, std::string, Formula, Boolean>;
using XRows = std::vector<std::vector<XCell>>;

struct XSheet {
  std::string name;
  XRows rows;
};

// `inline_strings`: libxlsxwriter's constant-memory mode, which writes text as
// inline strings (<is><t>) instead of shared strings, as openpyxl does.
inline void write_xlsx(const std::string& path, const std::vector<XSheet>& sheets, bool inline_strings = false) {
  lxw_workbook_options options = {};
  options.constant_memory = inline_strings ? LXW_TRUE : LXW_FALSE;
  lxw_workbook* workbook = workbook_new_opt(path.c_str(), &options);
  if (!workbook) throw std::runtime_error("cannot create " + path);
  for (const XSheet& sheet : sheets) {
    lxw_worksheet* ws = workbook_add_worksheet(workbook, sheet.name.c_str());
    for (size_t r = 0; r < sheet.rows.size(); ++r) {
      for (size_t c = 0; c < sheet.rows[r].size(); ++c) {
        const auto row = static_cast<lxw_row_t>(r);
        const auto col = static_cast<lxw_col_t>(c);
        const XCell& cell = sheet.rows[r][c];
        if (const auto* number = std::get_if<double>(&cell)) {
          worksheet_write_number(ws, row, col, *number, nullptr);
        } else if (const auto* text = std::get_if<std::string>(&cell)) {
          worksheet_write_string(ws, row, col, text->c_str(), nullptr);
        } else if (const auto* formula = std::get_if<Formula>(&cell)) {
          if (const auto* value = std::get_if<double>(&formula->result))
            worksheet_write_formula_num(ws, row, col, formula->formula.c_str(), nullptr, *value);
          else
            worksheet_write_formula_str(ws, row, col, formula->formula.c_str(), nullptr,
                                        std::get<std::string>(formula->result).c_str());
        } else if (const auto* boolean = std::get_if<Boolean>(&cell)) {
          worksheet_write_boolean(ws, row, col, boolean->value, nullptr);
        }
      }
    }
  }
  if (workbook_close(workbook) != LXW_NO_ERROR) throw std::runtime_error("cannot write " + path);
}

}  // namespace carotid::testing
