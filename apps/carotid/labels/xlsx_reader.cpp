#include "labels/xlsx_reader.h"

#include <orcus/sax_parser.hpp>
#include <orcus/zip_archive.hpp>
#include <orcus/zip_archive_stream.hpp>

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "tandem/error.h"

// liborcus does the two hard parts, the zip archive and the XML; the few
// parts of SpreadsheetML a label sheet needs are read here. orcus's own
// import filter (orcus_xlsx) is not used: in the 0.17 release Debian 12 and
// Ubuntu 22.04 ship, it reads files written by openpyxl (and so by pandas'
// to_excel) as empty sheets without a word, because it cannot follow an
// absolute part name in a relationship (Target="/xl/worksheets/sheet1.xml"),
// and it drops inline strings (<c t="inlineStr"><is><t>P0203</t></is></c>).
// The project's own label.xlsx has both.

namespace carotid {
namespace {

// ---- the package: a zip archive of parts found through relationships ----

// A label sheet's parts are kilobytes to a few megabytes.
constexpr uint64_t kMaxPartBytes = uint64_t{256} << 20;

uint64_t little_endian(const std::string& bytes, size_t at, int size) {
  uint64_t value = 0;
  for (int i = size - 1; i >= 0; --i) value = (value << 8) | static_cast<unsigned char>(bytes[at + i]);
  return value;
}

// orcus 0.17 allocates what an entry's header says it holds (packed and
// unpacked) before inflating it, and offers no way to ask first: a damaged header claiming gigabytes
// would take the machine's memory (found by fuzz_label_sheet). So the sizes
// in the zip's central directory are read here first. Archives this cannot
// follow are left to orcus to refuse.
void check_part_sizes(const std::string& bytes) {
  constexpr size_t kEndRecord = 22, kEntry = 46;
  if (bytes.size() < kEndRecord) return;
  const size_t lowest = bytes.size() > kEndRecord + 0xFFFF ? bytes.size() - kEndRecord - 0xFFFF : 0;
  for (size_t end = bytes.size() - kEndRecord + 1; end-- > lowest;) {
    if (little_endian(bytes, end, 4) != 0x06054b50) continue;
    const uint64_t entries = little_endian(bytes, end + 10, 2);
    size_t at = little_endian(bytes, end + 16, 4);
    for (uint64_t i = 0; i < entries && at + kEntry <= bytes.size(); ++i) {
      if (little_endian(bytes, at, 4) != 0x02014b50) return;
      const uint64_t packed = little_endian(bytes, at + 20, 4), size = little_endian(bytes, at + 24, 4);
      const size_t name_length = little_endian(bytes, at + 28, 2);
      const std::string name = bytes.substr(at + kEntry, std::min(name_length, bytes.size() - at - kEntry));
      if (size > kMaxPartBytes)
        throw std::runtime_error("part '" + name + "' claims " + std::to_string(size) +
                                 " bytes, more than a label sheet's part may hold (" +
                                 std::to_string(kMaxPartBytes >> 20) + " MiB): damaged?");
      if (packed > bytes.size())
        throw std::runtime_error("part '" + name + "' claims " + std::to_string(packed) +
                                 " compressed bytes, more than the whole file holds (" +
                                 std::to_string(bytes.size()) + "): damaged?");
      at += kEntry + name_length + little_endian(bytes, at + 30, 2) + little_endian(bytes, at + 32, 2);
    }
    return;
  }
}

class Package {
 public:
  explicit Package(const std::string& bytes)
      : stream_(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()), archive_(&stream_) {
    check_part_sizes(bytes);
    archive_.load();
  }

  bool read(const std::string& part, std::string& out) const {
    std::vector<unsigned char> buffer;
    if (!archive_.read_file_entry(part, buffer)) return false;
    out.assign(buffer.begin(), buffer.end());
    return true;
  }

 private:
  orcus::zip_archive_stream_blob stream_;
  orcus::zip_archive archive_;
};

std::string folder_of(const std::string& part) {
  const size_t slash = part.rfind('/');
  return slash == std::string::npos ? "" : part.substr(0, slash + 1);
}

// A relationship's target as a part name in the archive: absolute targets
// ("/xl/worksheets/sheet1.xml") start at the root, relative ones at the
// source part's folder, and ".." steps up.
std::string resolve_target(const std::string& source_folder, const std::string& target) {
  const std::string joined = !target.empty() && target[0] == '/' ? target.substr(1) : source_folder + target;
  std::vector<std::string> parts;
  std::stringstream in(joined);
  std::string piece;
  while (std::getline(in, piece, '/')) {
    if (piece.empty() || piece == ".") continue;
    if (piece == "..") {
      if (!parts.empty()) parts.pop_back();
      continue;
    }
    parts.push_back(piece);
  }
  std::string out;
  for (size_t i = 0; i < parts.size(); ++i) out += (i ? "/" : "") + parts[i];
  return out;
}

// ---- XML: orcus's SAX parser with a handler that keeps what is asked ----

// Collects an element's attributes (reported before the element itself) by
// local name; namespace prefixes are ignored, as writers differ in them.
class HandlerBase : public orcus::sax_handler {
 public:
  void attribute(const orcus::sax::parser_attribute& attr) { attrs_[std::string(attr.name)] = std::string(attr.value); }

 protected:
  std::string take(const char* name) const {
    const auto found = attrs_.find(name);
    return found == attrs_.end() ? "" : found->second;
  }
  void clear_attributes() { attrs_.clear(); }

 private:
  std::map<std::string, std::string> attrs_;
};

template <class Handler>
void parse_xml(const std::string& xml, Handler& handler) {
  orcus::sax_parser<Handler> parser(xml.data(), xml.size(), handler);
  parser.parse();
}

struct Relationship {
  std::string type;    // ends in "/worksheet", "/sharedStrings", "/officeDocument"
  std::string target;  // resolved to a part name
};

class RelationshipsHandler : public HandlerBase {
 public:
  explicit RelationshipsHandler(std::string source_folder) : folder_(std::move(source_folder)) {}
  void start_element(const orcus::sax::parser_element& elem) {
    if (elem.name == "Relationship" && take("TargetMode") != "External")
      by_id[take("Id")] = Relationship{take("Type"), resolve_target(folder_, take("Target"))};
    clear_attributes();
  }
  void end_element(const orcus::sax::parser_element&) {}

  std::map<std::string, Relationship> by_id;

 private:
  std::string folder_;
};

// The relationships of `part`, kept in "<folder>/_rels/<name>.rels".
std::map<std::string, Relationship> relationships_of(const Package& package, const std::string& part) {
  const std::string folder = folder_of(part);
  const std::string rels = folder + "_rels/" + part.substr(folder.size()) + ".rels";
  std::string xml;
  if (!package.read(rels, xml)) return {};
  RelationshipsHandler handler(folder);
  parse_xml(xml, handler);
  return handler.by_id;
}

bool has_suffix(const std::string& text, const std::string& suffix) {
  return text.size() >= suffix.size() && text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

class WorkbookHandler : public HandlerBase {
 public:
  void start_element(const orcus::sax::parser_element& elem) {
    if (elem.name == "sheet") sheets.push_back({take("name"), take("id")});  // r:id
    clear_attributes();
  }
  void end_element(const orcus::sax::parser_element&) {}

  struct Entry {
    std::string name, relationship_id;
  };
  std::vector<Entry> sheets;
};

// Text of <t> elements, outside phonetic runs (<rPh>), which readers hide.
class TextCollector {
 public:
  void start(std::string_view name) {
    if (name == "rPh") ++phonetic_;
    if (name == "t" && !phonetic_) in_text_ = true;
  }
  void end(std::string_view name) {
    if (name == "rPh" && phonetic_) --phonetic_;
    if (name == "t") in_text_ = false;
  }
  void characters(std::string_view text) {
    if (in_text_) text_.append(text);
  }
  std::string take() {
    std::string out;
    out.swap(text_);
    return out;
  }

 private:
  int phonetic_ = 0;
  bool in_text_ = false;
  std::string text_;
};

class SharedStringsHandler : public HandlerBase {
 public:
  void start_element(const orcus::sax::parser_element& elem) {
    if (elem.name == "si") text_.take();
    text_.start(elem.name);
    clear_attributes();
  }
  void end_element(const orcus::sax::parser_element& elem) {
    text_.end(elem.name);
    if (elem.name == "si") strings.push_back(text_.take());
  }
  void characters(std::string_view value, bool) { text_.characters(value); }

  std::vector<std::string> strings;

 private:
  TextCollector text_;
};

// "B7" -> row 6, column 1; false for anything else.
bool parse_cell_reference(const std::string& ref, int64_t& row, int64_t& column) {
  size_t i = 0;
  column = 0;
  for (; i < ref.size() && ref[i] >= 'A' && ref[i] <= 'Z'; ++i) {
    column = column * 26 + (ref[i] - 'A' + 1);
    if (column > 16384) return false;  // Excel's limit, XFD
  }
  const size_t letters = i;
  row = 0;
  for (; i < ref.size() && ref[i] >= '0' && ref[i] <= '9'; ++i) {
    row = row * 10 + (ref[i] - '0');
    if (row > 1048576) return false;
  }
  if (letters == 0 || i != ref.size() || row == 0) return false;
  row -= 1;
  column -= 1;
  return true;
}

class SheetHandler : public HandlerBase {
 public:
  SheetHandler(SheetCells& sheet, const std::vector<std::string>& shared) : sheet_(sheet), shared_(shared) {}

  void start_element(const orcus::sax::parser_element& elem) {
    const std::string_view name = elem.name;
    if (name == "row") {
      const std::string r = take("r");
      row_ = r.empty() ? row_ + 1 : std::strtoll(r.c_str(), nullptr, 10) - 1;
      column_ = -1;
    } else if (name == "c") {
      int64_t row = 0, column = 0;
      if (parse_cell_reference(take("r"), row, column)) {
        row_ = row;
        column_ = column;
      } else {
        column_ += 1;  // cells without a reference follow the previous one
      }
      type_ = take("t");
      value_.clear();
      in_value_ = in_inline_ = false;
    } else if (name == "v") {
      in_value_ = true;
    } else if (name == "is") {
      in_inline_ = true;
    }
    if (in_inline_) inline_text_.start(name);
    clear_attributes();
  }

  void end_element(const orcus::sax::parser_element& elem) {
    const std::string_view name = elem.name;
    if (in_inline_) inline_text_.end(name);
    if (name == "v") in_value_ = false;
    if (name == "is") {
      in_inline_ = false;
      value_ = inline_text_.take();
    }
    if (name == "c") store();
  }

  void characters(std::string_view text, bool) {
    if (in_value_) value_.append(text);
    if (in_inline_) inline_text_.characters(text);
  }

 private:
  // One finished <c>: its type attribute says how to read its value.
  void store() {
    Cell cell;
    if (type_ == "s") {  // an index into the shared strings
      size_t index = 0;
      const auto [end, ec] = std::from_chars(value_.data(), value_.data() + value_.size(), index);
      if (ec != std::errc() || end != value_.data() + value_.size() || index >= shared_.size())
        throw std::runtime_error("cell " + column_letters(column_) + std::to_string(row_ + 1) +
                                 " refers to shared string '" + value_ + "', which is missing");
      cell.kind = Cell::Kind::text;
      cell.text = shared_[index];
    } else if (type_ == "inlineStr" || type_ == "str" || type_ == "d") {
      cell.kind = Cell::Kind::text;  // inline text, a formula's text result, an ISO date
      cell.text = value_;
    } else if (type_ == "e") {
      cell.kind = Cell::Kind::error;
      cell.text = value_;
    } else if (!value_.empty()) {  // "n" (the default) or "b"
      double number = 0;
      const auto [end, ec] = std::from_chars(value_.data(), value_.data() + value_.size(), number);
      if (ec != std::errc() || end != value_.data() + value_.size())
        throw std::runtime_error("cell " + column_letters(column_) + std::to_string(row_ + 1) + " holds '" + value_ +
                                 "', which is not a number");
      cell.kind = Cell::Kind::number;
      cell.number = number;
    }
    if (cell.empty() || row_ < 0 || column_ < 0) return;
    auto& rows = sheet_.rows;
    if (rows.size() <= static_cast<size_t>(row_)) rows.resize(row_ + 1);
    auto& line = rows[row_];
    if (line.size() <= static_cast<size_t>(column_)) line.resize(column_ + 1);
    line[column_] = std::move(cell);
  }

  SheetCells& sheet_;
  const std::vector<std::string>& shared_;
  int64_t row_ = -1;
  int64_t column_ = -1;
  std::string type_;
  std::string value_;
  bool in_value_ = false;
  bool in_inline_ = false;
  TextCollector inline_text_;
};

std::vector<SheetCells> read_workbook(const std::string& bytes) {
  const Package package(bytes);
  // The package's root relationships name the workbook part.
  std::string workbook_part = "xl/workbook.xml";
  for (const auto& [id, rel] : relationships_of(package, ""))
    if (has_suffix(rel.type, "/officeDocument")) workbook_part = rel.target;
  std::string xml;
  if (!package.read(workbook_part, xml)) throw std::runtime_error("no workbook part (" + workbook_part + ")");
  WorkbookHandler workbook;
  parse_xml(xml, workbook);
  const auto rels = relationships_of(package, workbook_part);

  std::vector<std::string> shared;
  for (const auto& [id, rel] : rels) {
    if (!has_suffix(rel.type, "/sharedStrings") || !package.read(rel.target, xml)) continue;
    SharedStringsHandler strings;
    parse_xml(xml, strings);
    shared = std::move(strings.strings);
  }

  std::vector<SheetCells> sheets;
  for (const auto& entry : workbook.sheets) {
    SheetCells sheet;
    sheet.name = entry.name;
    const auto rel = rels.find(entry.relationship_id);
    if (rel != rels.end() && package.read(rel->second.target, xml)) {
      SheetHandler handler(sheet, shared);
      parse_xml(xml, handler);
    }
    sheets.push_back(std::move(sheet));
  }
  return sheets;
}

}  // namespace

std::vector<SheetCells> read_xlsx(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    throw tandem::UsageError(path + ": is a directory, expected an .xlsx file");
  std::ifstream file(path, std::ios::binary);
  if (!file) {
    if (!std::filesystem::exists(path, ec)) throw tandem::UsageError(path + ": no such file");
    throw tandem::UsageError(path + ": cannot open");
  }
  std::ostringstream content;
  content << file.rdbuf();
  try {
    return read_workbook(content.str());
  } catch (const std::exception& error) {
    throw tandem::UsageError(path + ": cannot read as an .xlsx workbook: " + error.what());
  }
}

std::string column_letters(size_t column) {
  std::string letters;
  for (size_t n = column + 1; n > 0; n = (n - 1) / 26)
    letters.insert(letters.begin(), static_cast<char>('A' + (n - 1) % 26));
  return letters;
}

}  // namespace carotid
