#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

#include "tandem/data/csv.h"
#include "tandem/io/atomic_file.h"

namespace tandem {
namespace {

[[noreturn]] void fail(const std::string& path, const std::string& what, int error) {
  throw std::runtime_error(path + ": " + what + ": " + std::strerror(error));
}

// `starts_file`: the file's first field. Left bare, a byte-order mark at its
// start would be taken for the file's own and dropped by readers (ours too).
bool needs_quotes(const std::string& field, bool only_field, bool starts_file) {
  if (field.empty()) return only_field;
  if (starts_file && field.compare(0, 3, "\xEF\xBB\xBF") == 0) return true;
  if (field.front() == ' ' || field.front() == '\t' || field.back() == ' ' || field.back() == '\t') return true;
  return field.find_first_of(",\"\r\n") != std::string::npos;
}

void append_row(std::string& out, const std::vector<std::string>& fields) {
  const bool first_row = out.empty();
  for (size_t i = 0; i < fields.size(); ++i) {
    if (i) out += ',';
    const std::string& field = fields[i];
    if (!needs_quotes(field, fields.size() == 1, first_row && i == 0)) {
      out += field;
      continue;
    }
    out += '"';
    for (const char c : field) {
      if (c == '"') out += '"';
      out += c;
    }
    out += '"';
  }
  out += '\n';
}

void write_all(const std::string& path, const std::string& bytes) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) fail(path, "cannot create", errno);
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int write_errno = errno;
      ::close(fd);
      fail(path, "cannot write", write_errno);
    }
    done += static_cast<size_t>(n);
  }
  if (::close(fd) != 0) fail(path, "cannot close", errno);
}

}  // namespace

void write_csv(const std::string& path, const std::vector<std::string>& header,
               const std::vector<std::vector<std::string>>& rows) {
  if (header.empty()) throw std::invalid_argument(path + ": a CSV file needs at least one column");
  std::string bytes;
  append_row(bytes, header);
  for (size_t i = 0; i < rows.size(); ++i) {
    if (rows[i].size() != header.size()) {
      throw std::invalid_argument(path + ": row " + std::to_string(i + 1) + " has " + std::to_string(rows[i].size()) +
                                  " fields, the header " + std::to_string(header.size()));
    }
    append_row(bytes, rows[i]);
  }

  replace_atomically(path, [&](const std::string& temp) { write_all(temp, bytes); });
}

}  // namespace tandem
