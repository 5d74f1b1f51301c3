// GPT-2 training throughput, ours against the same model in PyTorch eager
// mode, in one run:
//   build/tests/bench/bench_gpt2_train [--presets tiny,gpt2] [--steps N] [--warmup N]
//       [--batch B] [--seq T] [--threads N] [--repeats N] [--device cpu|cuda] [--python PATH]
// For each preset (GPTConfig::preset) one step is forward, cross-entropy over
// every next-token position, backward, and tandem::AdamW (weight decay 0.1 on
// matrices), in fp32 on random tokens. Then tests/bench/bench_gpt2_train.py
// trains the same shape, batch, sequence length and thread count with Debian's
// python3-torch (the same LibTorch) and torch.optim.AdamW, and the table shows
// tokens/s of both, their ratio, model FLOP/s (GPTConfig::flops_per_token) and
// MFU where the GPU is in tandem's peak table (n/a on a CPU), and on a CPU
// the milliseconds of each phase of a step. The two sides
// run alternately --repeats times (default 2) and each keeps its best.
// Defaults keep a 2-core CPU run to a few minutes: tiny trains 4 x 128 tokens
// for 10 steps after 2 warm-up steps, gpt2 (124M) 1 x 128 for 3 after 1.
// The flags, when given, apply to every preset.
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "bench_args.h"
#include "model/gpt2.h"
#include "tandem/dist/cuda_info.h"
#include "tandem/error.h"
#include "tandem/obs/mfu.h"
#include "tandem/train/adamw.h"

#ifndef TANDEM_BENCH_DIR
#define TANDEM_BENCH_DIR "tests/bench"
#endif

namespace fs = std::filesystem;
using summarize::GPTConfig;

namespace {

struct Shape {
  int64_t batch, seq, steps, warmup;
};

struct Result {
  double tokens_per_s = 0;
  double loss_first = 0, loss_last = 0;
  int64_t parameters = 0;
  double forward_ms = -1, backward_ms = -1, optimizer_ms = -1;  // per step, on a CPU only
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

Result run_ours(const GPTConfig& config, const Shape& s, const torch::Device& device) {
  torch::manual_seed(0);
  summarize::GPT model(config);
  model->to(device);
  model->train();
  tandem::NamedTensors params;
  Result result;
  for (const auto& p : model->named_parameters()) {
    params.emplace_back(p.key(), p.value());
    result.parameters += p.value().numel();
  }
  tandem::AdamWOptions options;
  options.beta2 = 0.95;
  options.weight_decay = 0.1;
  tandem::AdamW optimizer(params, options, [](const std::string&, const at::Tensor& p) { return p.dim() >= 2; });
  const at::Tensor idx = torch::randint(config.vocab_size, {s.batch, s.seq}, torch::TensorOptions(torch::kLong).device(device));
  const at::Tensor every = torch::ones({s.batch, s.seq}, torch::TensorOptions(torch::kBool).device(device));

  // On a CPU each op has finished when it returns, so the phases are timed
  // for free; on a GPU that would take a synchronisation each, which would
  // slow the step down: there only the whole step is.
  const bool phases = device.is_cpu();
  double phase_s[3] = {0, 0, 0};
  const auto step = [&] {
    auto t0 = std::chrono::steady_clock::now();
    const at::Tensor loss = summarize::lm_loss(model->forward(idx), idx, every);
    auto t1 = std::chrono::steady_clock::now();
    loss.backward();
    auto t2 = std::chrono::steady_clock::now();
    optimizer.step(6e-4);
    optimizer.zero_grad();
    const double value = loss.item<double>();  // after the step: waits for the device to finish it
    if (phases) {
      phase_s[0] += std::chrono::duration<double>(t1 - t0).count();
      phase_s[1] += std::chrono::duration<double>(t2 - t1).count();
      phase_s[2] += std::chrono::duration<double>(std::chrono::steady_clock::now() - t2).count();
    }
    return value;
  };
  bool first = true;
  const auto record = [&](double loss) {
    if (first) result.loss_first = loss;
    first = false;
    return loss;
  };
  for (int64_t i = 0; i < s.warmup; ++i) record(step());
  std::fill(phase_s, phase_s + 3, 0.0);
  const auto start = std::chrono::steady_clock::now();
  for (int64_t i = 0; i < s.steps; ++i) result.loss_last = record(step());
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  result.tokens_per_s = static_cast<double>(s.batch * s.seq * s.steps) / seconds;
  if (phases) {
    result.forward_ms = phase_s[0] * 1e3 / s.steps;
    result.backward_ms = phase_s[1] * 1e3 / s.steps;
    result.optimizer_ms = phase_s[2] * 1e3 / s.steps;
  }
  return result;
}

// The Python side's figures, or why there are none.
std::optional<Result> run_python(const std::string& python, const GPTConfig& config, const Shape& s, int threads,
                                 const std::string& device, std::string* why) {
  const fs::path script = fs::path(TANDEM_BENCH_DIR) / "bench_gpt2_train.py";
  if (python.find('/') != std::string::npos && !fs::exists(python)) {
    *why = python + " not found (apt-get install python3-torch)";
    return std::nullopt;
  }
  if (!fs::exists(script)) {
    *why = script.string() + " not found";
    return std::nullopt;
  }
  std::ostringstream command;
  command << "'" << python << "' '" << script.string() << "' --n-layer " << config.n_layer << " --n-head " << config.n_head
          << " --n-embd " << config.n_embd << " --vocab " << config.vocab_size << " --block " << config.block_size
          << " --batch " << s.batch << " --seq " << s.seq << " --steps " << s.steps << " --warmup " << s.warmup
          << " --threads " << threads << " --device " << device << " 2>&1";
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
  } else if (status != 0 || json.is_discarded() || !json.contains("tokens_per_s")) {
    *why = "unexpected output (status " + std::to_string(status) + ") from " + command.str() + ": " + output;
  }
  if (!why->empty()) return std::nullopt;
  return Result{json["tokens_per_s"], json["loss_first"], json["loss_last"], json["parameters"],
                json.value("forward_ms", -1.0), json.value("backward_ms", -1.0), json.value("optimizer_ms", -1.0)};
}

std::string flops_text(double flops_per_s) {
  char text[32];
  if (flops_per_s >= 1e12) std::snprintf(text, sizeof text, "%.2f TFLOP/s", flops_per_s / 1e12);
  else std::snprintf(text, sizeof text, "%.1f GFLOP/s", flops_per_s / 1e9);
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
  std::string presets = "tiny,gpt2", python = "/usr/bin/python3";
  std::string device_name = torch::cuda::is_available() ? "cuda" : "cpu";
  Shape flags{0, 0, 0, -1};
  int threads = 2, repeats = 2;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string key = argv[i];
    const char* value = argv[i + 1];
    if (key == "--presets") presets = value;
    else if (key == "--steps") flags.steps = std::atoll(value);
    else if (key == "--warmup") flags.warmup = std::atoll(value);
    else if (key == "--batch") flags.batch = std::atoll(value);
    else if (key == "--seq") flags.seq = std::atoll(value);
    else if (key == "--threads") threads = std::atoi(value);
    else if (key == "--repeats") repeats = std::max(1, std::atoi(value));
    else if (key == "--device") device_name = value;
    else if (key == "--python") python = value;
    else {
      std::fprintf(stderr, "bench_gpt2_train: unknown flag %s\n", key.c_str());
      return 2;
    }
  }

  try {
    at::set_num_threads(threads);
    const torch::Device device(device_name);
    std::string gpu_name;
    if (device.is_cuda()) {
      const auto gpus = tandem::visible_gpus();
      const int index = device.has_index() ? device.index() : 0;
      if (index < static_cast<int>(gpus.size())) gpu_name = gpus[index].name;
    }
    std::printf("GPT-2 training, fp32 on %s (%s), %d intra-op threads; forward + cross-entropy + backward + AdamW; "
                "best of %d alternating runs\n",
                device_name.c_str(), gpu_name.empty() ? "no MFU peak" : gpu_name.c_str(), threads, repeats);
    std::printf("%-6s %7s %7s %5s %-11s %10s %15s %6s %14s  %s\n", "preset", "params", "BxT", "steps", "impl", "tokens/s",
                "model FLOP/s", "MFU", "loss 1st>last", "ms/step: fwd+loss bwd adamw");
    std::vector<std::string> unavailable;
    for (const auto& preset : bench::split(presets)) {
      const GPTConfig config = GPTConfig::preset(preset);
      const Shape s = shape_for(preset, flags);
      if (s.seq > config.block_size) throw tandem::UsageError("--seq exceeds " + preset + "'s block_size " + std::to_string(config.block_size));
      const double flops = config.flops_per_token(s.seq);
      // Alternating runs, the best of each side: a shared machine's noise
      // mostly slows a run down.
      Result ours;
      std::optional<Result> py;
      std::string why;
      for (int r = 0; r < repeats; ++r) {
        const Result mine = run_ours(config, s, device);
        if (mine.tokens_per_s > ours.tokens_per_s) ours = mine;
        if (!why.empty()) continue;
        const auto theirs = run_python(python, config, s, threads, device_name, &why);
        if (theirs && (!py || theirs->tokens_per_s > py->tokens_per_s)) py = theirs;
      }

      char shape[32], params[32];
      std::snprintf(shape, sizeof shape, "%lldx%lld", (long long)s.batch, (long long)s.seq);
      std::snprintf(params, sizeof params, "%.1fM", ours.parameters / 1e6);
      const auto row = [&](const char* impl, const Result& r) {
        char split[64] = "-";
        if (r.forward_ms >= 0)
          std::snprintf(split, sizeof split, "%.0f %.0f %.0f", r.forward_ms, r.backward_ms, r.optimizer_ms);
        std::printf("%-6s %7s %7s %5lld %-11s %10.0f %15s %6s %8.2f>%5.2f  %s\n", preset.c_str(), params, shape,
                    (long long)s.steps, impl, r.tokens_per_s, flops_text(r.tokens_per_s * flops).c_str(),
                    mfu_text(r.tokens_per_s * flops, gpu_name).c_str(), r.loss_first, r.loss_last, split);
      };
      row("ours (C++)", ours);
      if (!py) {
        unavailable.push_back(preset + ": " + why);
        continue;
      }
      row("python", *py);
      std::printf("%-6s %7s %7s %5s %-11s %9.2fx\n", preset.c_str(), "", "", "", "ours/python",
                  ours.tokens_per_s / py->tokens_per_s);
      if (py->parameters != ours.parameters)
        std::printf("  warning: python's model has %lld parameters, ours %lld\n", (long long)py->parameters,
                    (long long)ours.parameters);
    }
    for (const auto& line : unavailable) std::printf("python baseline unavailable: %s\n", line.c_str());
  } catch (const std::exception& error) {
    std::fprintf(stderr, "bench_gpt2_train: %s\n", error.what());
    return 2;
  }
  return 0;
}
