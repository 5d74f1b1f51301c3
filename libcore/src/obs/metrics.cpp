#include "tandem/obs/metrics.h"

#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <stdexcept>

namespace tandem {

MetricsWriter::MetricsWriter(const std::string& path) : path_(path) {
  const auto dir = std::filesystem::path(path).parent_path();
  if (!dir.empty()) std::filesystem::create_directories(dir);
  out_.open(path, std::ios::app);
  if (!out_) throw std::runtime_error(path + ": cannot open for appending");
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
  out_ << obj.dump() << '\n' << std::flush;
  if (!out_) throw std::runtime_error(path_ + ": write failed");
}

}  // namespace tandem
