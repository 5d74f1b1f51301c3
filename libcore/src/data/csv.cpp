#include "tandem/data/csv.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <unordered_map>

#include "tandem/error.h"

namespace tandem {
namespace {

std::string join(const std::vector<std::string>& items, const char* separator) {
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) out += (i ? separator : "") + items[i];
  return out;
}

std::string read_file(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) throw UsageError(path + ": is a directory, expected a CSV file");
  std::FILE* file = std::fopen(path.c_str(), "rb");
  if (!file) {
    if (errno == ENOENT) throw UsageError(path + ": no such file");
    throw UsageError(path + ": cannot open: " + std::strerror(errno));
  }
  std::string text;
  const auto size = std::filesystem::file_size(path, ec);
  if (!ec) text.reserve(size);
  char buffer[1 << 16];
  size_t n;
  while ((n = std::fread(buffer, 1, sizeof buffer, file)) > 0) text.append(buffer, n);
  const int read_errno = std::ferror(file) ? errno : 0;
  std::fclose(file);
  if (read_errno) throw UsageError(path + ": cannot read: " + std::strerror(read_errno));
  return text;
}

struct Record {
  std::vector<std::string> fields;
  int64_t line = 0;
  std::string problem;  // the first thing wrong with the record, as a message
};

// One pass over the file's bytes, validating UTF-8 on the way; fields are cut
// out in runs between the bytes that matter, not appended byte by byte.
class Parser {
 public:
  Parser(const std::string& path, const std::string& text, size_t start, char delimiter)
      : path_(path), text_(text.data()), size_(text.size()), pos_(start), delimiter_(delimiter) {}

  // The next record, or false at the end of the input.
  bool next(Record& record) {
    while (pos_ < size_ && is_line_end(text_[pos_])) skip_line_end();
    if (pos_ >= size_) return false;
    record.fields.clear();
    record.problem.clear();
    record.line = line_;
    for (;;) {
      std::string& field = record.fields.emplace_back();
      if (pos_ < size_ && text_[pos_] == '"') {
        read_quoted(field, record);
      } else {
        read_unquoted(field, record);
      }
      if (pos_ >= size_) return true;
      if (text_[pos_] == delimiter_) {
        ++pos_;
        continue;
      }
      skip_line_end();
      return true;
    }
  }

  std::string where(int64_t line) const { return path_ + ":" + std::to_string(line) + ": "; }

 private:
  static bool is_line_end(char c) { return c == '\n' || c == '\r'; }

  void skip_line_end() {
    if (text_[pos_] == '\r' && pos_ + 1 < size_ && text_[pos_ + 1] == '\n') ++pos_;
    ++pos_;
    ++line_;
  }

  void note(Record& record, const std::string& problem) const {
    if (record.problem.empty()) record.problem = where(line_) + problem;
  }

  // Appends up to the next delimiter or line end.
  void read_unquoted(std::string& field, Record& record) {
    const size_t start = pos_;
    while (pos_ < size_) {
      const auto c = static_cast<unsigned char>(text_[pos_]);
      if (c == static_cast<unsigned char>(delimiter_) || c == '\n' || c == '\r') break;
      if (c == '"') {
        note(record,
             "stray quote in an unquoted field; quote the whole field and double the quotes inside "
             "(\"say \"\"hi\"\"\")");
      }
      pos_ += c < 0x80 ? 1 : utf8_length();
    }
    field.append(text_ + start, pos_ - start);
  }

  void read_quoted(std::string& field, Record& record) {
    const int64_t open_line = line_;
    size_t run = ++pos_;
    for (;;) {
      if (pos_ >= size_) throw UsageError(where(open_line) + "quoted field never closed (started here)");
      const auto c = static_cast<unsigned char>(text_[pos_]);
      if (c == '"') {
        field.append(text_ + run, pos_ - run);
        if (pos_ + 1 < size_ && text_[pos_ + 1] == '"') {
          field += '"';
          pos_ += 2;
          run = pos_;
          continue;
        }
        ++pos_;
        break;
      }
      // CRLF counts once, at its LF.
      if (c == '\n' || (c == '\r' && !(pos_ + 1 < size_ && text_[pos_ + 1] == '\n'))) ++line_;
      pos_ += c < 0x80 ? 1 : utf8_length();
    }
    if (pos_ < size_ && text_[pos_] != delimiter_ && !is_line_end(text_[pos_])) {
      note(record,
           "text after the closing quote of a quoted field; a quote inside a quoted field is written "
           "twice (\"say \"\"hi\"\"\")");
      read_unquoted(field, record);
    }
  }

  // Length of the multi-byte UTF-8 sequence at pos_; throws where it is not one
  // (overlong forms, surrogates and code points past U+10FFFF included).
  size_t utf8_length() const {
    const auto* s = reinterpret_cast<const unsigned char*>(text_) + pos_;
    size_t n = 0;
    unsigned char low = 0x80, high = 0xBF;  // allowed range of the second byte
    if (s[0] >= 0xC2 && s[0] <= 0xDF) {
      n = 2;
    } else if (s[0] >= 0xE0 && s[0] <= 0xEF) {
      n = 3;
      if (s[0] == 0xE0) low = 0xA0;
      if (s[0] == 0xED) high = 0x9F;
    } else if (s[0] >= 0xF0 && s[0] <= 0xF4) {
      n = 4;
      if (s[0] == 0xF0) low = 0x90;
      if (s[0] == 0xF4) high = 0x8F;
    }
    bool ok = n > 0 && pos_ + n <= size_ && s[1] >= low && s[1] <= high;
    for (size_t i = 2; ok && i < n; ++i) ok = s[i] >= 0x80 && s[i] <= 0xBF;
    if (!ok) {
      char byte[8];
      std::snprintf(byte, sizeof byte, "0x%02X", s[0]);
      throw UsageError(where(line_) + "invalid UTF-8 at byte offset " + std::to_string(pos_) + " (" + byte +
                       "); save the file as UTF-8 (it may be Latin-1 or Windows-1252)");
    }
    return n;
  }

  const std::string& path_;
  const char* text_;
  size_t size_;
  size_t pos_;
  char delimiter_;
  int64_t line_ = 1;
};

void check_header(const std::string& path, const std::vector<std::string>& header) {
  std::unordered_map<std::string, size_t> seen;
  for (size_t i = 0; i < header.size(); ++i) {
    const auto [it, fresh] = seen.emplace(header[i], i);
    if (!fresh) {
      throw UsageError(path + ":1: column '" + header[i] + "' appears twice in the header (columns " +
                       std::to_string(it->second + 1) + " and " + std::to_string(i + 1) + ")");
    }
  }
}

}  // namespace

size_t CsvTable::column(const std::string& name, const std::string& key_hint) const {
  for (size_t i = 0; i < header.size(); ++i) {
    if (header[i] == name) return i;
  }
  std::string message = path + ": no column '" + name + "' (columns: " + join(header, ", ") + ")";
  if (!key_hint.empty()) message += "; set " + key_hint;
  throw UsageError(message);
}

CsvTable read_csv(const std::string& path, const CsvOptions& options) {
  const char d = options.delimiter;
  if (d == '"' || d == '\r' || d == '\n' || static_cast<unsigned char>(d) >= 0x80) {
    throw std::invalid_argument(path + ": CSV delimiter must be an ASCII character other than quote, CR and LF");
  }
  const std::string text = read_file(path);
  if (text.size() >= 2 && ((text[0] == '\xFF' && text[1] == '\xFE') || (text[0] == '\xFE' && text[1] == '\xFF'))) {
    throw UsageError(path + ": file is UTF-16; save it as UTF-8 (\"CSV UTF-8\" in Excel)");
  }
  const size_t start = text.compare(0, 3, "\xEF\xBB\xBF") == 0 ? 3 : 0;

  Parser parser(path, text, start, d);
  CsvTable table;
  table.path = path;
  Record record;
  if (!parser.next(record)) throw UsageError(path + ": empty file, expected a header row");
  if (!record.problem.empty()) throw UsageError(record.problem + " (in the header)");
  table.header = std::move(record.fields);
  check_header(path, table.header);

  const size_t width = table.header.size();
  while (parser.next(record)) {
    std::string problem = std::move(record.problem);
    if (problem.empty() && record.fields.size() != width) {
      const size_t n = record.fields.size();
      problem = parser.where(record.line) + std::to_string(n) + (n == 1 ? " field" : " fields") + ", expected " +
                std::to_string(width) + " (" + join(table.header, ",") + ")";
    }
    if (!problem.empty()) {
      if (!options.skip_bad_rows) throw UsageError(problem);
      if (table.skipped++ == 0) table.first_skipped = std::move(problem);
      continue;
    }
    table.rows.push_back(std::move(record.fields));
    table.lines.push_back(record.line);
  }
  return table;
}

}  // namespace tandem
