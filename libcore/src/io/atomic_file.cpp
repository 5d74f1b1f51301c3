#include "tandem/io/atomic_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <stdexcept>

#include "tandem/io/stream_error.h"

namespace tandem {
namespace {

namespace fs = std::filesystem;

// Forces a file's (or a directory's entries') data to the disk, so that the
// rename never becomes visible before the bytes it points to.
void fsync_path(const std::string& path, int flags) {
  const int fd = ::open(path.c_str(), flags | O_CLOEXEC);
  if (fd < 0) throw std::runtime_error(path + ": cannot open for fsync: " + std::strerror(errno));
  const int status = ::fsync(fd);
  const int fsync_errno = errno;
  ::close(fd);
  if (status != 0) throw std::runtime_error(path + ": fsync failed: " + std::strerror(fsync_errno));
}

}  // namespace

std::string temp_path_for(const std::string& path) {
  const fs::path target(path);
  return (target.parent_path() / ("." + target.filename().string() + ".tmp-" + std::to_string(::getpid()))).string();
}

void replace_atomically(const std::string& path, const std::function<void(const std::string& temp)>& write) {
  const std::string temp = temp_path_for(path);
  try {
    write(temp);
    fsync_path(temp, O_RDONLY);
    if (std::rename(temp.c_str(), path.c_str()) != 0) {
      throw std::runtime_error(path + ": cannot rename " + temp + " over it: " + std::strerror(errno));
    }
  } catch (...) {
    std::error_code ignored;
    fs::remove(temp, ignored);
    throw;
  }
  // The rename itself is durable only once the directory is synced.
  const fs::path parent = fs::path(path).parent_path();
  fsync_path(parent.empty() ? "." : parent.string(), O_RDONLY | O_DIRECTORY);
}

void write_bytes_atomically(const std::string& path, const std::string& bytes) {
  replace_atomically(path, [&](const std::string& temp) {
    std::ofstream out(temp, std::ios::binary);
    errno = 0;
    out << bytes;
    if (!out.flush()) throw std::runtime_error(path + ": cannot write: " + stream_error());
  });
}

}  // namespace tandem
