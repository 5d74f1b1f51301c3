// GPT-2 training throughput, ours against the same model in PyTorch eager
// mode, in one run:
//   build/tests/bench/bench_gpt2_train [--presets tiny,gpt2] [--steps N] [--warmup N]
//       [--batch B] [--seq T] [--threads N] [--repeats N] [--device cpu|cuda] [--python PATH]
// For each preset (GPTConfig::preset) one step is forward, cross-entropy over
// every next-token position, backward, and tandem::AdamW (weight decay 0.1 on
// matrices), in fp32 on random tokens. Then tests/bench/bench_gpt2_train.py
// trains the same shape, batch, sequence length and thread count with Debian's
// python3-torch (the same LibTorch) and torch.optim.AdamW, and the table shows
// tokens/s of both, their ratio, model FLOP/s (GPTConfig::training_flops) and
// MFU where the GPU is in tandem's peak table (n/a on a CPU), and on a CPU
// the milliseconds of each phase of a step. The two sides
// run alternately --repeats times (default 2) and each keeps its best.
// Defaults keep a 2-core CPU run to a few minutes: tiny trains 4 x 128 tokens
// for 10 steps after 2 warm-up steps, gpt2 (124M) 1 x 128 for 3 after 1.
// The flags, when given, apply to every preset.
#include <torch/torch.h>

#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

#include "baseline.h"
#include "bench_args.h"
#include "model/gpt2.h"
#include "tandem/dist/cuda_info.h"
#include "tandem/error.h"
#include "tandem/host_memory.h"
#include "tandem/obs/mfu.h"
#include "tandem/train/adamw.h"

using summarize::GPTConfig;

namespace {

struct Shape {
  int64_t batch, seq, steps, warmup;
};

// Per-preset defaults, each overridden by its flag when one was given.
Shape shape_for(const std::string& preset, const Shape& flags) {
  Shape s = preset == "tiny" ? Shape{4, 128, 10, 2} : Shape{1, 128, 3, 1};
  if (flags.batch > 0) s.batch = flags.batch;
  if (flags.seq > 0) s.seq = flags.seq;
  if (flags.steps > 0) s.steps = flags.steps;
  if (flags.warmup >= 0) s.warmup = flags.warmup;
  return s;
}

bench::Figures run_ours(const GPTConfig& config, const Shape& s, const torch::Device& device) {
  torch::manual_seed(0);
  summarize::GPT model(config);
  model->to(device);
  model->train();
  tandem::NamedTensors params;
  int64_t parameters = 0;
  for (const auto& p : model->named_parameters()) {
    params.emplace_back(p.key(), p.value());
    parameters += p.value().numel();
  }
  tandem::AdamWOptions options;
  options.beta2 = 0.95;
  options.weight_decay = 0.1;
  tandem::AdamW optimizer(params, options, [](const std::string&, const at::Tensor& p) { return p.dim() >= 2; });
  const at::Tensor idx =
      torch::randint(config.vocab_size, {s.batch, s.seq}, torch::TensorOptions(torch::kLong).device(device));
  const at::Tensor every = torch::ones({s.batch, s.seq}, torch::TensorOptions(torch::kBool).device(device));
  bench::Figures figures = bench::time_training(
      device, s.warmup, s.steps, static_cast<double>(s.batch * s.seq),
      [&] { return summarize::lm_loss(model->forward(idx), idx, every); },
      [&] {
        optimizer.step(6e-4);
        optimizer.zero_grad();
      });
  figures.parameters = parameters;
  return figures;
}

// bench_gpt2_train.py's flags for the same model and shape.
std::string python_args(const GPTConfig& config, const Shape& s) {
  std::ostringstream args;
  args << "--n-layer " << config.n_layer << " --n-head " << config.n_head << " --n-embd " << config.n_embd
       << " --vocab " << config.vocab_size << " --block " << config.block_size << " --batch " << s.batch << " --seq "
       << s.seq << " --steps " << s.steps << " --warmup " << s.warmup;
  return args.str();
}

std::string flops_text(double flops_per_s) {
  char text[32];
  if (flops_per_s >= 1e12)
    std::snprintf(text, sizeof text, "%.2f TFLOP/s", flops_per_s / 1e12);
  else
    std::snprintf(text, sizeof text, "%.1f GFLOP/s", flops_per_s / 1e9);
  return text;
}

std::string mfu_text(double flops_per_s, const std::string& gpu_name) {
  if (gpu_name.empty()) return "n/a";
  const auto fraction = tandem::mfu(flops_per_s, gpu_name, "fp32");
  if (!fraction) return "n/a";
  char text[16];
  std::snprintf(text, sizeof text, "%.1f%%", *fraction * 100);
  return text;
}

}  // namespace

int main(int argc, char** argv) {
  std::string presets = "tiny,gpt2";
  bench::BaselineFlags race_flags;
  Shape flags{0, 0, 0, -1};
  const auto take = [&](const std::string& key, const char* value) {
    if (key == "--presets")
      presets = value;
    else if (key == "--steps")
      flags.steps = std::atoll(value);
    else if (key == "--warmup")
      flags.warmup = std::atoll(value);
    else if (key == "--batch")
      flags.batch = std::atoll(value);
    else if (key == "--seq")
      flags.seq = std::atoll(value);
    else
      return race_flags.take(key, value);
    return true;
  };
  const char* usage =
      "[--presets tiny,gpt2] [--steps N] [--warmup N] [--batch B] [--seq T] [--threads N] "
      "[--repeats N] [--device cpu|cuda] [--python PATH]";
  if (const auto stop = bench::parse_flags(argc, argv, "bench_gpt2_train", usage, take)) return *stop;
  tandem::keep_freed_host_memory();  // as the apps do (run_program)

  try {
    at::set_num_threads(race_flags.threads);
    const torch::Device device(race_flags.device);
    std::string gpu_name;
    if (device.is_cuda()) {
      const auto gpus = tandem::visible_gpus();
      const int index = device.has_index() ? device.index() : 0;
      if (index < static_cast<int>(gpus.size())) gpu_name = gpus[index].name;
    }
    std::printf(
        "GPT-2 training, fp32 on %s (%s), %d intra-op threads; forward + cross-entropy + backward + AdamW; "
        "best of %d alternating runs\n",
        race_flags.device.c_str(), gpu_name.empty() ? "no MFU peak" : gpu_name.c_str(), race_flags.threads,
        race_flags.repeats);
    std::printf("%-6s %7s %7s %5s %-11s %10s %15s %6s %14s  %s\n", "preset", "params", "BxT", "steps", "impl",
                "tokens/s", "model FLOP/s", "MFU", "loss 1st>last", "ms/step: fwd+loss bwd adamw");
    std::vector<std::string> unavailable;
    for (const auto& preset : bench::split(presets)) {
      const GPTConfig config = GPTConfig::preset(preset);
      const Shape s = shape_for(preset, flags);
      if (s.seq > config.block_size)
        throw tandem::UsageError("--seq exceeds " + preset + "'s block_size " + std::to_string(config.block_size));
      // Every position is predicted here: the head runs on all of them.
      const double flops = config.training_flops(s.seq, s.seq) / static_cast<double>(s.seq);
      const bench::Race race = bench::race(
          race_flags.repeats, [&] { return run_ours(config, s, device); },
          [&](std::string* why) {
            return bench::run_python("bench_gpt2_train.py", python_args(config, s), race_flags, "tokens_per_s", why);
          });

      char shape[32], params[32], lead[64];
      std::snprintf(shape, sizeof shape, "%lldx%lld", (long long)s.batch, (long long)s.seq);
      std::snprintf(params, sizeof params, "%.1fM", race.ours.parameters / 1e6);
      std::snprintf(lead, sizeof lead, "%-6s %7s %7s %5s ", preset.c_str(), "", "", "");
      const auto row = [&](const char* impl, const bench::Figures& r) {
        char split[64] = "-";
        if (r.forward_ms >= 0)
          std::snprintf(split, sizeof split, "%.0f %.0f %.0f", r.forward_ms, r.backward_ms, r.optimizer_ms);
        std::printf("%-6s %7s %7s %5lld %-11s %10.0f %15s %6s %8.2f>%5.2f  %s\n", preset.c_str(), params, shape,
                    (long long)s.steps, impl, r.items_per_s, flops_text(r.items_per_s * flops).c_str(),
                    mfu_text(r.items_per_s * flops, gpu_name).c_str(), r.loss_first, r.loss_last, split);
      };
      if (!bench::print_race(race, row, lead, 9)) unavailable.push_back(preset + ": " + race.why);
    }
    for (const auto& line : unavailable) std::printf("python baseline unavailable: %s\n", line.c_str());
  } catch (const std::exception& error) {
    std::fprintf(stderr, "bench_gpt2_train: %s\n", error.what());
    return 2;
  }
  return 0;
}
