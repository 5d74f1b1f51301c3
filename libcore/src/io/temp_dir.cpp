#include "tandem/io/temp_dir.h"

#include <stdlib.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <string>

namespace tandem {
namespace fs = std::filesystem;

TempDir::TempDir(const fs::path& parent, const std::string& stem) {
  std::string pattern = (fs::absolute(parent) / ("." + stem + "-XXXXXX")).string();
  if (!::mkdtemp(pattern.data()))
    throw std::runtime_error(parent.string() + ": cannot create a temporary directory: " + std::strerror(errno));
  path_ = pattern;
}

TempDir::~TempDir() {
  std::error_code ignored;
  fs::remove_all(path_, ignored);
}

}  // namespace tandem
