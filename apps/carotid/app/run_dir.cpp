#include "app/run_dir.h"

#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>

#include "app/commands.h"
#include "tandem/config/config.h"
#include "tandem/dist/world.h"
#include "tandem/error.h"
#include "tandem/io/atomic_file.h"
#include "tandem/obs/log.h"
#include "tandem/train/train_keys.h"

namespace carotid {
namespace fs = std::filesystem;

namespace {

std::string timestamp_name(const std::string& prefix) {
  const std::time_t now = std::time(nullptr);
  std::tm local{};
  localtime_r(&now, &local);
  char text[32];
  std::strftime(text, sizeof text, "_%Y%m%d_%H%M%S", &local);
  return prefix + text;
}

}  // namespace

std::string pick_run_dir(const tandem::Config& config, const std::string& prefix) {
  const std::string given = tandem::read_keys<CommandKeys>(config).run_dir;
  if (!given.empty()) return given;
  const fs::path base = tandem::run_settings(config).out_dir;
  const char* job = std::getenv("SLURM_JOB_ID");
  const fs::path marker = job && *job ? base / (".slurm-job-" + std::string(job)) : fs::path();
  if (!marker.empty() && fs::is_regular_file(marker)) {
    std::ifstream in(marker);
    std::string name;
    std::getline(in, name);
    if (!name.empty() && fs::is_directory(base / name)) {
      tandem::log::info("Slurm job ", job, " continues its run ", (base / name).string());
      return (base / name).string();
    }
  }
  std::string name = timestamp_name(prefix);
  // Two runs started in the same second get train_..._2, _3, ...
  for (int n = 2; fs::exists(base / name); ++n) name = timestamp_name(prefix) + "_" + std::to_string(n);
  return (base / name).string();
}

void create_run_dir(const tandem::Config& config, const std::string& dir) {
  fs::create_directories(dir);
  const char* job = std::getenv("SLURM_JOB_ID");
  if (!job || !*job || !tandem::read_keys<CommandKeys>(config).run_dir.empty()) return;
  // Beside the folder, in the train.out_dir it was picked in: train has set
  // train.out_dir to the folder itself by now.
  const fs::path marker = fs::path(dir).parent_path() / (".slurm-job-" + std::string(job));
  const std::string name = fs::path(dir).filename().string();
  tandem::write_bytes_atomically(marker.string(), name + "\n");
}

std::string choose_run_dir(tandem::World& world, const tandem::Config& config, const std::string& prefix) {
  std::string dir = world.is_main() ? pick_run_dir(config, prefix) : std::string();
  uint64_t length = dir.size();
  world.broadcast_bytes(&length, sizeof length, 0);
  dir.resize(length);
  world.broadcast_bytes(dir.data(), length, 0);
  return dir;
}

}  // namespace carotid
