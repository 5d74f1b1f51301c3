#include "tandem/obs/metrics.h"

#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>

#include "tandem/io/stream_error.h"

namespace tandem {
namespace {

namespace fs = std::filesystem;

// A run killed, or stopped by a full disk, mid-line leaves a line without its
// newline. The resumed run appends after it; cut it first, or the next row
// would continue it and the file would stop being one object per line.
void drop_unfinished_line(const std::string& path) {
  std::error_code missing;
  const auto size = fs::file_size(path, missing);
  if (missing || size == 0) return;
  std::ifstream in(path, std::ios::binary);
  // The last newline, looked for from the end a block at a time.
  uintmax_t keep = 0;
  std::string block;
  for (uintmax_t end = size; end > 0;) {
    const uintmax_t begin = end > 4096 ? end - 4096 : 0;
    block.resize(end - begin);
    if (!in.seekg(static_cast<std::streamoff>(begin)) || !in.read(block.data(), static_cast<std::streamsize>(block.size())))
      throw std::runtime_error(path + ": cannot read its last line");
    const size_t newline = block.rfind('\n');
    if (newline != std::string::npos) {
      keep = begin + newline + 1;
      break;
    }
    end = begin;
  }
  if (keep < size) fs::resize_file(path, keep);
}

}  // namespace

MetricsWriter::MetricsWriter(const std::string& path) : path_(path) {
  const auto dir = fs::path(path).parent_path();
  if (!dir.empty()) fs::create_directories(dir);
  drop_unfinished_line(path);
  out_.open(path, std::ios::app);
  if (!out_) throw std::runtime_error(path + ": cannot open for appending: " + std::strerror(errno));
}

void MetricsWriter::write(const Row& row) {
  // ordered_json keeps the caller's field order: step first reads best.
  nlohmann::ordered_json obj = nlohmann::ordered_json::object();
  for (const auto& [key, value] : row) {
    nlohmann::ordered_json& field = obj[key];
    std::visit(
        [&](const auto& v) {
          using T = std::decay_t<decltype(v)>;
          if constexpr (std::is_same_v<T, double>)
            field = std::isfinite(v) ? nlohmann::ordered_json(v) : nlohmann::ordered_json();
          else
            field = v;
        },
        value);
  }
  // One flushed line per step: a crash loses at most the step in progress.
  errno = 0;
  out_ << obj.dump() << '\n' << std::flush;
  if (!out_) throw std::runtime_error(path_ + ": cannot write: " + stream_error());
}

}  // namespace tandem
