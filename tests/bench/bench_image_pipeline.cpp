// Image loading throughput on one thread, the work one loader thread does per
// sample in apps/carotid and apps/vavae:
//   build/tests/bench/bench_image_pipeline [--dir DIR] [--seconds S] [--channels 1|3]
//                                          [--synthetic WxH]
// over the PNGs under DIR (default ../shared/data/breast_ultrasound/images),
// or, with --synthetic, 32 generated gray PNGs of that size (e.g. 500x400, an
// ultrasound scan's order of size). Each case loops over the files until S
// seconds (default 2) have passed:
//   read          read_image only
//   read+224      + resize to 224x224 (evaluation at ResNet size)
//   read+aug224   + augment to 224x224 (training at ResNet size)
//   read+28       + resize to 28x28 (the MNIST-sized models)
#include <torch/torch.h>
#include <unistd.h>

#include <algorithm>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "tandem/image/read_image.h"
#include "tandem/image/transform.h"
#include "tandem/image/write_png.h"
#include "bench_args.h"

namespace fs = std::filesystem;
namespace image = tandem::image;

namespace {

std::vector<std::string> pngs_under(const fs::path& dir) {
  std::vector<std::string> files;
  for (const auto& entry : fs::recursive_directory_iterator(dir))
    if (entry.is_regular_file() && entry.path().extension() == ".png") files.push_back(entry.path().string());
  std::sort(files.begin(), files.end());
  return files;
}

// Smooth gray shapes plus noise: compresses about as well as a scan does, so
// decoding costs what it would on real files.
std::vector<std::string> write_synthetic(const fs::path& dir, int64_t width, int64_t height) {
  fs::create_directories(dir);
  torch::manual_seed(0);
  const auto y = torch::linspace(0, 6.28, height).view({1, height, 1});
  const auto x = torch::linspace(0, 6.28, width).view({1, 1, width});
  std::vector<std::string> files;
  for (int k = 0; k < 32; ++k) {
    const auto picture =
        0.5 + 0.3 * torch::sin(x * (1 + k % 5)) * torch::cos(y * (1 + k % 3)) + 0.05 * torch::randn({1, height, width});
    files.push_back((dir / ("s" + std::to_string(k) + ".png")).string());
    image::write_png(files.back(), picture);
  }
  return files;
}

// Images per second of `work` applied to the files in turn until `seconds`
// have passed (whole passes over a short list, partial over a long one).
double throughput(const std::vector<std::string>& files, double seconds,
                  const std::function<void(const std::string&, uint64_t)>& work) {
  using clock = std::chrono::steady_clock;
  for (size_t i = 0; i < std::min<size_t>(files.size(), 8); ++i) work(files[i], i);  // warm-up
  const auto start = clock::now();
  uint64_t done = 0;
  double elapsed = 0;
  while (elapsed < seconds) {
    work(files[done % files.size()], done);
    ++done;
    elapsed = std::chrono::duration<double>(clock::now() - start).count();
  }
  return done / elapsed;
}

}  // namespace

int main(int argc, char** argv) {
  std::string dir = TANDEM_SHARED_DATA "/breast_ultrasound/images", synthetic;
  double seconds = 2;
  int64_t channels = 3;
  const auto take = [&](const std::string& key, const char* value) {
    if (key == "--dir")
      dir = value;
    else if (key == "--seconds")
      seconds = std::atof(value);
    else if (key == "--channels")
      channels = std::atoll(value);
    else if (key == "--synthetic")
      synthetic = value;
    else
      return false;
    return true;
  };
  const char* usage = "[--dir DIR] [--seconds S] [--channels 1|3] [--synthetic WxH]";
  if (const auto stop = bench::parse_flags(argc, argv, "bench_image_pipeline", usage, take)) return *stop;
  torch::set_num_threads(1);

  std::vector<std::string> files;
  fs::path temp;
  if (!synthetic.empty()) {
    int64_t width = 0, height = 0;
    if (std::sscanf(synthetic.c_str(), "%ldx%ld", &width, &height) != 2 || width < 1 || height < 1) {
      std::fprintf(stderr, "--synthetic: expected WxH, e.g. 500x400, got %s\n", synthetic.c_str());
      return 2;
    }
    temp = fs::temp_directory_path() / ("bench_image_pipeline-" + std::to_string(::getpid()));
    files = write_synthetic(temp, width, height);
    dir = temp.string() + " (synthetic)";
  } else if (fs::is_directory(dir)) {
    files = pngs_under(dir);
  }
  if (files.empty()) {
    std::fprintf(stderr, "no PNG files under %s (give --dir DIR or --synthetic WxH)\n", dir.c_str());
    return 2;
  }
  const at::Tensor first = image::read_image(files.front(), channels);
  std::printf(
      "image pipeline, 1 thread: %zu PNGs under %s (first is %ldx%ld), read as %ld channel(s), "
      "%.0f s per case\n",
      files.size(), dir.c_str(), static_cast<long>(first.size(2)), static_cast<long>(first.size(1)),
      static_cast<long>(channels), seconds);

  const image::AugmentOptions augment_options;
  struct Case {
    const char* name;
    std::function<void(const std::string&, uint64_t)> work;
  };
  const std::vector<Case> cases = {
      {"read", [&](const std::string& f, uint64_t) { image::read_image(f, channels); }},
      {"read+224", [&](const std::string& f, uint64_t) { image::resize(image::read_image(f, channels), 224, 224); }},
      {"read+aug224",
       [&](const std::string& f, uint64_t seed) {
         image::augment(image::read_image(f, channels), 224, augment_options, seed);
       }},
      {"read+28", [&](const std::string& f, uint64_t) { image::resize(image::read_image(f, channels), 28, 28); }},
  };
  std::printf("  %-12s %12s %10s\n", "case", "images/s", "ms/image");
  for (const auto& c : cases) {
    const double rate = throughput(files, seconds, c.work);
    std::printf("  %-12s %12.0f %10.3f\n", c.name, rate, 1000.0 / rate);
  }
  if (!temp.empty()) fs::remove_all(temp);
  return 0;
}
