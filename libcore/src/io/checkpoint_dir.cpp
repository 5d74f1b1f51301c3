#include "tandem/io/checkpoint_dir.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <regex>
#include <utility>

#include "tandem/error.h"

namespace tandem {
namespace {

namespace fs = std::filesystem;

const std::regex kCheckpointName(R"(step-(\d+)\.h5)");
// What temp_path_for (io/atomic_file.h) names save_checkpoint's temporary
// files for those.
const std::regex kTempName(R"(\.step-\d+\.h5\.tmp-\d+)");

// (step, path) of every complete checkpoint, by step.
std::vector<std::pair<int64_t, std::string>> checkpoints_in(const std::string& dir) {
  std::vector<std::pair<int64_t, std::string>> found;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    std::smatch match;
    if (entry.is_regular_file(ec) && std::regex_match(name, match, kCheckpointName)) {
      found.emplace_back(std::stoll(match[1].str()), entry.path().string());
    }
  }
  std::sort(found.begin(), found.end());
  return found;
}

}  // namespace

CheckpointDir::CheckpointDir(std::string dir, int keep_last) : dir_(std::move(dir)), keep_last_(keep_last) {}

std::string CheckpointDir::path_for(int64_t step) const {
  char name[32];
  std::snprintf(name, sizeof name, "step-%08lld.h5", static_cast<long long>(step));
  return (fs::path(dir_) / name).string();
}

std::string CheckpointDir::save(int64_t step, const TensorSets& sets, const CheckpointState& state) {
  fs::create_directories(dir_);
  const std::string path = path_for(step);
  save_checkpoint(path, sets, state);

  // One process writes a run's checkpoints, so a temporary file still here
  // after a save completed was left by a crash; it can be gigabytes.
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir_, ec)) {
    if (std::regex_match(entry.path().filename().string(), kTempName)) fs::remove(entry.path(), ec);
  }

  if (keep_last_ > 0) {
    // The checkpoint just saved stays even where older runs left higher steps.
    std::vector<std::string> others;
    for (auto& [found_step, found_path] : checkpoints_in(dir_)) {
      if (found_step != step) others.push_back(std::move(found_path));
    }
    const size_t keep_others = static_cast<size_t>(keep_last_) - 1;
    for (size_t i = 0; i + keep_others < others.size(); ++i) fs::remove(others[i]);
  }
  return path;
}

std::vector<std::string> CheckpointDir::list() const {
  std::vector<std::string> paths;
  for (auto& [step, path] : checkpoints_in(dir_)) paths.push_back(std::move(path));
  return paths;
}

std::optional<std::string> CheckpointDir::latest() const {
  auto found = checkpoints_in(dir_);
  if (found.empty()) return std::nullopt;
  return std::move(found.back().second);
}

std::optional<Checkpoint> CheckpointDir::load_latest(
    const std::function<void(const std::string& path, const std::string& why)>& passed_over) const {
  const auto found = checkpoints_in(dir_);
  std::string newest_error;
  for (auto it = found.rbegin(); it != found.rend(); ++it) {
    try {
      return open_checkpoint(it->second);
    } catch (const UsageError& error) {
      passed_over(it->second, error.what());
      if (newest_error.empty()) newest_error = error.what();
    }
  }
  if (found.empty()) return std::nullopt;
  throw UsageError("none of the " + std::to_string(found.size()) + " checkpoints in " + dir_ +
                   " reads back whole; the newest: " + newest_error);
}

}  // namespace tandem
