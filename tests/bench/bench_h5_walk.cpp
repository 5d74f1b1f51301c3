// What the first reading of an HDF5 file by tandem-h5walk (io/h5_guard.h)
// adds to loading a checkpoint:
//   build/tests/bench/bench_h5_walk [--mb 500] [--tensors 150] [--rounds 3] [--dir DIR]
// writes a checkpoint of about MB megabytes of float32 tensors in DIR
// (default /tmp; GPT-2 124M's weights are 500 MB, 1.5 GB with AdamW's two
// moments), then loads it as a resume does, with the walk and without
// (TANDEM_H5_WALK pointed nowhere, so the program warns once), alternating,
// best of ROUNDS each, the file in the page cache. Before each load the
// file's modification time moves, so that each load walks it afresh.
#include <stdlib.h>
#include <torch/torch.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>

#include "bench_args.h"
#include "tandem/io/checkpoint.h"

namespace fs = std::filesystem;

int main(int argc, char** argv) {
  int64_t mb = 500, tensors = 150, rounds = 3;
  std::string dir = "/tmp";
  const char* usage = "[--mb 500] [--tensors 150] [--rounds 3] [--dir /tmp]";
  if (const auto status = bench::parse_flags(argc, argv, "bench_h5_walk", usage, [&](const std::string& key,
                                                                                        const char* value) {
        if (key == "--mb") return (mb = std::stoll(value)) > 0;
        if (key == "--tensors") return (tensors = std::stoll(value)) > 0;
        if (key == "--rounds") return (rounds = std::stoll(value)) > 0;
        if (key == "--dir") return !(dir = value).empty();
        return false;
      }))
    return *status;

  const std::string path = (fs::path(dir) / ("bench_h5_walk_" + std::to_string(getpid()) + ".h5")).string();
  const int64_t per_tensor = (mb << 20) / 4 / tensors;
  tandem::NamedTensors model;
  for (int64_t i = 0; i < tensors; ++i)
    model.emplace_back("w" + std::to_string(i), torch::randn({per_tensor / 768, 768}));
  tandem::save_checkpoint(path, {{"model", model}}, {{"step", int64_t{1}}});
  std::printf("checkpoint: %s, %.0f MB in %lld tensors\n", path.c_str(), fs::file_size(path) / 1048576.0,
              static_cast<long long>(tensors));

  const std::string walker = std::getenv("TANDEM_H5_WALK") ? std::getenv("TANDEM_H5_WALK") : "";
  auto load_seconds = [&](bool walk, int64_t round) {
    if (walk) {
      walker.empty() ? ::unsetenv("TANDEM_H5_WALK") : ::setenv("TANDEM_H5_WALK", walker.c_str(), 1);
    } else {
      ::setenv("TANDEM_H5_WALK", "/nonexistent/tandem-h5walk", 1);
    }
    fs::last_write_time(path, fs::file_time_type::clock::now() + std::chrono::seconds(2 * round + walk));
    const auto start = std::chrono::steady_clock::now();
    const tandem::Checkpoint loaded = tandem::load_checkpoint(path);
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  load_seconds(false, 0);  // into the page cache
  double plain = 1e30, walked = 1e30;
  for (int64_t round = 1; round <= rounds; ++round) {
    plain = std::min(plain, load_seconds(false, round));
    walked = std::min(walked, load_seconds(true, round));
  }
  fs::remove(path);
  std::printf("load without the walk  %8.3f s\n", plain);
  std::printf("load with the walk     %8.3f s   (%.2fx; the walk adds %.3f s, %.0f MB/s)\n", walked, walked / plain,
              walked - plain, mb / std::max(walked - plain, 1e-9));
  return 0;
}
