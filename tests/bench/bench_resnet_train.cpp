// ResNet training throughput, ours (tandem::nn::ResNet) against the same
// model in PyTorch eager mode, in one run:
//   build/tests/bench/bench_resnet_train [--size 224,28] [--depth 18,34] [--batch B] [--steps N]
//       [--warmup N] [--stem imagenet|small] [--in-channels C] [--classes K] [--threads N]
//       [--repeats N] [--device cpu|cuda] [--python PATH]
// One step is forward, cross-entropy, backward and torch::optim::AdamW (lr
// 1e-3, weight decay 0.01), in fp32 on random images and labels. Then
// tests/bench/bench_resnet_train.py trains the same model, batch and thread
// count with Debian's python3-torch (the same LibTorch) and torch.optim.AdamW;
// the table shows ms/step and images/s of both, their ratio, and on a CPU the
// milliseconds of each phase of a step. The two sides run alternately
// --repeats times (default 2) and each keeps its best.
// Per size, unless flags say otherwise: above 64 pixels the ImageNet stem and
// batch 16, at 64 or less the small stem and batch 64; 5 steps after 2 warm-up
// steps (the first allocates the optimizer's state), a few minutes on 2 cores.
#include <torch/torch.h>

#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

#include "baseline.h"
#include "bench_args.h"
#include "tandem/host_memory.h"
#include "tandem/nn/resnet.h"

namespace {

struct Setup {
  tandem::nn::ResNetOptions model;
  int64_t size = 0, batch = 0, steps = 0, warmup = 0;
};

bench::Figures run_ours(const Setup& s, const torch::Device& device) {
  torch::manual_seed(0);
  tandem::nn::ResNet model(s.model);
  model->to(device);
  model->train();
  int64_t parameters = 0;
  for (const auto& p : model->parameters()) parameters += p.numel();
  torch::optim::AdamW optimizer(model->parameters(), torch::optim::AdamWOptions(1e-3).weight_decay(0.01));
  const auto on = torch::TensorOptions().device(device);
  const at::Tensor x = torch::randn({s.batch, s.model.in_channels, s.size, s.size}, on);
  const at::Tensor y = torch::randint(s.model.num_classes, {s.batch}, on.dtype(torch::kLong));
  bench::Figures figures = bench::time_training(
      device, s.warmup, s.steps, static_cast<double>(s.batch),
      [&] { return torch::nn::functional::cross_entropy(model->forward(x), y); },
      [&] {
        optimizer.step();
        // Dropped rather than zeroed, as Python's default: backward then
        // writes fresh gradients instead of adding to zeros.
        optimizer.zero_grad(/*set_to_none=*/true);
      });
  figures.parameters = parameters;
  return figures;
}

// bench_resnet_train.py's flags for the same model, images and steps.
std::string python_args(const Setup& s) {
  std::ostringstream args;
  args << "--depth " << s.model.depth << " --stem " << s.model.stem << " --in-channels " << s.model.in_channels
       << " --classes " << s.model.num_classes << " --size " << s.size << " --batch " << s.batch << " --steps "
       << s.steps << " --warmup " << s.warmup;
  return args.str();
}

}  // namespace

int main(int argc, char** argv) {
  std::string sizes = "224,28", depths = "18", stem;
  bench::BaselineFlags race_flags;
  int64_t batch = 0, steps = 5, warmup = 2, in_channels = 3, classes = 1000;
  const auto take = [&](const std::string& key, const char* value) {
    if (key == "--size")
      sizes = value;
    else if (key == "--depth")
      depths = value;
    else if (key == "--batch")
      batch = std::atoll(value);
    else if (key == "--steps")
      steps = std::atoll(value);
    else if (key == "--warmup")
      warmup = std::atoll(value);
    else if (key == "--stem")
      stem = value;
    else if (key == "--in-channels")
      in_channels = std::atoll(value);
    else if (key == "--classes")
      classes = std::atoll(value);
    else
      return race_flags.take(key, value);
    return true;
  };
  const char* usage =
      "[--size 224,28] [--depth 18,34] [--batch B] [--steps N] [--warmup N] "
      "[--stem imagenet|small] [--in-channels C] [--classes K] [--threads N] [--repeats N] "
      "[--device cpu|cuda] [--python PATH]";
  if (const auto stop = bench::parse_flags(argc, argv, "bench_resnet_train", usage, take)) return *stop;
  tandem::keep_freed_host_memory();  // as the apps do (run_program)

  try {
    at::set_num_threads(race_flags.threads);
    const torch::Device device(race_flags.device);
    std::printf(
        "ResNet training, fp32 on %s, %d intra-op threads; forward + cross-entropy + backward + AdamW; "
        "best of %d alternating runs\n",
        race_flags.device.c_str(), race_flags.threads, race_flags.repeats);
    std::printf("%-8s %-8s %4s %5s %5s %-11s %9s %9s %14s  %s\n", "model", "stem", "size", "batch", "steps", "impl",
                "ms/step", "images/s", "loss 1st>last", "ms/step: fwd+loss bwd adamw");
    std::vector<std::string> unavailable;
    for (const auto& depth : bench::split(depths)) {
      for (const auto& size_text : bench::split(sizes)) {
        Setup s;
        s.size = std::atoll(size_text.c_str());
        s.model.depth = std::atoll(depth.c_str());
        s.model.stem = !stem.empty() ? stem : s.size > 64 ? "imagenet" : "small";
        s.model.in_channels = in_channels;
        s.model.num_classes = classes;
        s.model.validate();
        s.batch = batch > 0 ? batch : s.size > 64 ? 16 : 64;
        s.steps = steps;
        s.warmup = warmup;
        const bench::Race race = bench::race(
            race_flags.repeats, [&] { return run_ours(s, device); },
            [&](std::string* why) {
              return bench::run_python("bench_resnet_train.py", python_args(s), race_flags, "images_per_s", why);
            });

        const std::string name = "resnet" + depth;
        char lead[64];
        std::snprintf(lead, sizeof lead, "%-8s %-8s %4s %5s %5s ", name.c_str(), s.model.stem.c_str(), "", "", "");
        const auto row = [&](const char* impl, const bench::Figures& r) {
          char split[64] = "-";
          if (r.forward_ms >= 0)
            std::snprintf(split, sizeof split, "%.0f %.0f %.0f", r.forward_ms, r.backward_ms, r.optimizer_ms);
          std::printf("%-8s %-8s %4lld %5lld %5lld %-11s %9.1f %9.1f %8.3f>%5.3f  %s\n", name.c_str(),
                      s.model.stem.c_str(), (long long)s.size, (long long)s.batch, (long long)s.steps, impl,
                      1e3 * s.batch / r.items_per_s, r.items_per_s, r.loss_first, r.loss_last, split);
        };
        if (!bench::print_race(race, row, lead, 8)) unavailable.push_back(name + " at " + size_text + ": " + race.why);
      }
    }
    for (const auto& line : unavailable) std::printf("python baseline skipped: %s\n", line.c_str());
  } catch (const std::exception& error) {
    std::fprintf(stderr, "bench_resnet_train: %s\n", error.what());
    return 2;
  }
  return 0;
}
