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

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "bench_args.h"
#include "tandem/nn/resnet.h"

#ifndef TANDEM_BENCH_DIR
#define TANDEM_BENCH_DIR "tests/bench"
#endif

namespace fs = std::filesystem;

namespace {

struct Setup {
  tandem::nn::ResNetOptions model;
  int64_t size = 0, batch = 0, steps = 0, warmup = 0;
};

struct Result {
  double images_per_s = 0;
  double loss_first = 0, loss_last = 0;
  int64_t parameters = 0;
  double forward_ms = -1, backward_ms = -1, optimizer_ms = -1;  // per step, on a CPU only
};

Result run_ours(const Setup& s, const torch::Device& device) {
  torch::manual_seed(0);
  tandem::nn::ResNet model(s.model);
  model->to(device);
  model->train();
  Result result;
  for (const auto& p : model->parameters()) result.parameters += p.numel();
  torch::optim::AdamW optimizer(model->parameters(), torch::optim::AdamWOptions(1e-3).weight_decay(0.01));
  const auto on = torch::TensorOptions().device(device);
  const at::Tensor x = torch::randn({s.batch, s.model.in_channels, s.size, s.size}, on);
  const at::Tensor y = torch::randint(s.model.num_classes, {s.batch}, on.dtype(torch::kLong));

  // On a CPU each op has finished when it returns, so the phases are timed
  // for free; on a GPU that would take a synchronisation each, which would
  // slow the step down: there only the whole step is.
  const bool phases = device.is_cpu();
  double phase_s[3] = {0, 0, 0};
  const auto step = [&] {
    const auto t0 = std::chrono::steady_clock::now();
    const at::Tensor loss = torch::nn::functional::cross_entropy(model->forward(x), y);
    const auto t1 = std::chrono::steady_clock::now();
    loss.backward();
    const auto t2 = std::chrono::steady_clock::now();
    optimizer.step();
    // Dropped rather than zeroed (LibTorch 1.13's zero_grad zeroes), as
    // Python's zero_grad(set_to_none=True): backward then writes fresh
    // gradients instead of adding to zeros.
    for (auto& p : model->parameters()) p.mutable_grad().reset();
    const double value = loss.item<double>();  // after the step: waits for the device to finish it
    if (phases) {
      phase_s[0] += std::chrono::duration<double>(t1 - t0).count();
      phase_s[1] += std::chrono::duration<double>(t2 - t1).count();
      phase_s[2] += std::chrono::duration<double>(std::chrono::steady_clock::now() - t2).count();
    }
    return value;
  };
  for (int64_t i = 0; i < s.warmup; ++i) {
    const double loss = step();
    if (i == 0) result.loss_first = loss;
  }
  std::fill(phase_s, phase_s + 3, 0.0);
  const auto start = std::chrono::steady_clock::now();
  for (int64_t i = 0; i < s.steps; ++i) {
    result.loss_last = step();
    if (i == 0 && s.warmup == 0) result.loss_first = result.loss_last;
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  result.images_per_s = static_cast<double>(s.batch * s.steps) / seconds;
  if (phases) {
    result.forward_ms = phase_s[0] * 1e3 / s.steps;
    result.backward_ms = phase_s[1] * 1e3 / s.steps;
    result.optimizer_ms = phase_s[2] * 1e3 / s.steps;
  }
  return result;
}

// The Python side's figures, or why there are none.
std::optional<Result> run_python(const std::string& python, const Setup& s, int threads, const std::string& device,
                                 std::string* why) {
  const fs::path script = fs::path(TANDEM_BENCH_DIR) / "bench_resnet_train.py";
  if (python.find('/') != std::string::npos && !fs::exists(python)) {
    *why = python + " not found (apt-get install python3-torch)";
    return std::nullopt;
  }
  if (!fs::exists(script)) {
    *why = script.string() + " not found";
    return std::nullopt;
  }
  std::ostringstream command;
  command << "'" << python << "' '" << script.string() << "' --depth " << s.model.depth << " --stem " << s.model.stem
          << " --in-channels " << s.model.in_channels << " --classes " << s.model.num_classes << " --size " << s.size
          << " --batch " << s.batch << " --steps " << s.steps << " --warmup " << s.warmup << " --threads " << threads
          << " --device " << device << " 2>&1";
  std::string output;
  int status = -1;
  if (FILE* pipe = popen(command.str().c_str(), "r")) {
    char buffer[4096];
    for (size_t n; (n = fread(buffer, 1, sizeof buffer, pipe)) > 0;) output.append(buffer, n);
    status = pclose(pipe);
  }
  // The JSON is the last line; anything before it is a warning.
  const size_t end = output.find_last_not_of('\n');
  const size_t begin = end == std::string::npos ? 0 : output.rfind('\n', end);
  const auto json = nlohmann::json::parse(
      end == std::string::npos ? std::string() : output.substr(begin == std::string::npos ? 0 : begin + 1), nullptr, false);
  if (!json.is_discarded() && json.contains("error")) {
    *why = json["error"].get<std::string>();
  } else if (status != 0 || json.is_discarded() || !json.contains("images_per_s")) {
    *why = "unexpected output (status " + std::to_string(status) + ") from " + command.str() + ": " + output;
  }
  if (!why->empty()) return std::nullopt;
  return Result{json["images_per_s"], json["loss_first"], json["loss_last"], json["parameters"],
                json.value("forward_ms", -1.0), json.value("backward_ms", -1.0), json.value("optimizer_ms", -1.0)};
}

}  // namespace

int main(int argc, char** argv) {
  std::string sizes = "224,28", depths = "18", stem, python = "/usr/bin/python3";
  std::string device_name = torch::cuda::is_available() ? "cuda" : "cpu";
  int64_t batch = 0, steps = 5, warmup = 2, in_channels = 3, classes = 1000;
  int threads = 2, repeats = 2;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string key = argv[i];
    const char* value = argv[i + 1];
    if (key == "--size") sizes = value;
    else if (key == "--depth") depths = value;
    else if (key == "--batch") batch = std::atoll(value);
    else if (key == "--steps") steps = std::atoll(value);
    else if (key == "--warmup") warmup = std::atoll(value);
    else if (key == "--stem") stem = value;
    else if (key == "--in-channels") in_channels = std::atoll(value);
    else if (key == "--classes") classes = std::atoll(value);
    else if (key == "--threads") threads = std::atoi(value);
    else if (key == "--repeats") repeats = std::max(1, std::atoi(value));
    else if (key == "--device") device_name = value;
    else if (key == "--python") python = value;
    else {
      std::fprintf(stderr, "bench_resnet_train: unknown flag %s\n", key.c_str());
      return 2;
    }
  }
  if ((argc - 1) % 2 != 0) {
    std::fprintf(stderr, "bench_resnet_train: flag %s has no value\n", argv[argc - 1]);
    return 2;
  }

  try {
    at::set_num_threads(threads);
    const torch::Device device(device_name);
    std::printf("ResNet training, fp32 on %s, %d intra-op threads; forward + cross-entropy + backward + AdamW; "
                "best of %d alternating runs\n",
                device_name.c_str(), threads, repeats);
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

        // Alternating runs, the best of each side: a shared machine's noise
        // mostly slows a run down.
        Result ours;
        std::optional<Result> py;
        std::string why;
        for (int r = 0; r < repeats; ++r) {
          const Result mine = run_ours(s, device);
          if (mine.images_per_s > ours.images_per_s) ours = mine;
          if (!why.empty()) continue;
          const auto theirs = run_python(python, s, threads, device_name, &why);
          if (theirs && (!py || theirs->images_per_s > py->images_per_s)) py = theirs;
        }

        const std::string name = "resnet" + depth;
        const auto row = [&](const char* impl, const Result& r) {
          char split[64] = "-";
          if (r.forward_ms >= 0)
            std::snprintf(split, sizeof split, "%.0f %.0f %.0f", r.forward_ms, r.backward_ms, r.optimizer_ms);
          std::printf("%-8s %-8s %4lld %5lld %5lld %-11s %9.1f %9.1f %8.3f>%5.3f  %s\n", name.c_str(),
                      s.model.stem.c_str(), (long long)s.size, (long long)s.batch, (long long)s.steps, impl,
                      1e3 * s.batch / r.images_per_s, r.images_per_s, r.loss_first, r.loss_last, split);
        };
        row("ours (C++)", ours);
        if (!py) {
          unavailable.push_back(name + " at " + size_text + ": " + why);
          continue;
        }
        row("python", *py);
        std::printf("%-8s %-8s %4s %5s %5s %-11s %8.2fx\n", name.c_str(), s.model.stem.c_str(), "", "", "",
                    "ours/python", ours.images_per_s / py->images_per_s);
        if (py->parameters != ours.parameters)
          std::printf("  warning: python's model has %lld parameters, ours %lld\n", (long long)py->parameters,
                      (long long)ours.parameters);
      }
    }
    for (const auto& line : unavailable) std::printf("python baseline skipped: %s\n", line.c_str());
  } catch (const std::exception& error) {
    std::fprintf(stderr, "bench_resnet_train: %s\n", error.what());
    return 2;
  }
  return 0;
}
