// One optimizer step over a DiT-B/1's parameters (12 blocks of hidden 768,
// 130M floats), on one thread:
//   build/tests/bench/bench_adamw [--rounds N] [--blocks B]
// tandem::AdamW (LibTorch's fused AdamW kernel) against torch::optim::AdamW,
// which updates one parameter at a time in elementwise passes, as the
// default torch.optim.AdamW does on a CPU; and tandem::AdamW with 8-bit
// moments (train.optimizer_state = "8bit"), with each one's state bytes. The
// sides take turns; each prints its best step in ms, then the ratios. On a
// CPU the step waits for memory, so the figure is about bytes moved per
// parameter, not arithmetic.
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "bench_args.h"
#include "tandem/train/adamw.h"

namespace {

// A DiT block's weights and biases (qkv, proj, SwiGLU's w12 and w3, adaLN)
// and its two RMSNorm scales.
tandem::NamedTensors dit_params(int blocks) {
  const int64_t hidden = 768, mlp = 2048;
  const std::vector<std::pair<std::string, std::vector<int64_t>>> shapes = {
      {"qkv.weight", {3 * hidden, hidden}}, {"qkv.bias", {3 * hidden}},       {"proj.weight", {hidden, hidden}},
      {"proj.bias", {hidden}},              {"w12.weight", {2 * mlp, hidden}}, {"w12.bias", {2 * mlp}},
      {"w3.weight", {hidden, mlp}},         {"w3.bias", {hidden}},             {"ada.weight", {6 * hidden, hidden}},
      {"ada.bias", {6 * hidden}},           {"norm1.weight", {hidden}},        {"norm2.weight", {hidden}}};
  tandem::NamedTensors params;
  for (int b = 0; b < blocks; ++b) {
    for (const auto& [name, shape] : shapes) {
      at::Tensor p = torch::randn(shape);
      p.mutable_grad() = torch::randn(shape);
      params.emplace_back("blocks." + std::to_string(b) + "." + name, p);
    }
  }
  return params;
}

double ms_of(const std::function<void()>& step) {
  const auto t0 = std::chrono::steady_clock::now();
  step();
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

int main(int argc, char** argv) {
  int rounds = 5, blocks = 12;
  const auto take = [&](const std::string& key, const char* value) {
    if (key == "--rounds")
      rounds = std::atoi(value);
    else if (key == "--blocks")
      blocks = std::atoi(value);
    else
      return false;
    return true;
  };
  if (const auto stop = bench::parse_flags(argc, argv, "bench_adamw", "[--rounds N] [--blocks B]", take)) return *stop;
  if (rounds < 1 || blocks < 1) {
    std::fprintf(stderr, "bench_adamw: --rounds and --blocks must be positive\n");
    return 2;
  }
  torch::set_num_threads(1);
  torch::manual_seed(0);
  const double lr = 1e-4, decay = 0.01;
  const auto matrices = [](const std::string&, const at::Tensor& p) { return p.dim() >= 2; };

  const tandem::NamedTensors ours = dit_params(blocks);
  tandem::AdamW fused(ours, tandem::AdamWOptions{0.9, 0.95, 1e-8, decay}, matrices);

  const tandem::NamedTensors theirs = dit_params(blocks);
  std::vector<at::Tensor> with_decay, without;
  int64_t count = 0;
  for (const auto& [name, p] : theirs) {
    (p.dim() >= 2 ? with_decay : without).push_back(p);
    count += p.numel();
  }
  const auto group_options = [&](double weight_decay) {
    auto o = std::make_unique<torch::optim::AdamWOptions>(lr);
    o->betas({0.9, 0.95}).eps(1e-8).weight_decay(weight_decay);
    return o;
  };
  std::vector<torch::optim::OptimizerParamGroup> groups;
  groups.emplace_back(with_decay, group_options(decay));
  groups.emplace_back(without, group_options(0.0));
  torch::optim::AdamW reference(groups, torch::optim::AdamWOptions(lr));

  const tandem::NamedTensors quantized = dit_params(blocks);
  tandem::AdamWOptions eight{0.9, 0.95, 1e-8, decay};
  eight.eight_bit = true;
  tandem::AdamW fused8(quantized, eight, matrices);

  // The first step of each allocates its state (torch's lazily): not timed.
  fused.step(lr);
  reference.step();
  fused8.step(lr);
  double ours_ms = std::numeric_limits<double>::infinity(), theirs_ms = ours_ms, eight_ms = ours_ms;
  for (int r = 0; r < rounds; ++r) {
    ours_ms = std::min(ours_ms, ms_of([&] { fused.step(lr); }));
    theirs_ms = std::min(theirs_ms, ms_of([&] { reference.step(); }));
    eight_ms = std::min(eight_ms, ms_of([&] { fused8.step(lr); }));
  }
  const auto state_mb = [](const tandem::AdamW& a) {
    int64_t bytes = 0;
    for (const auto& [name, t] : a.state()) bytes += t.numel() * static_cast<int64_t>(t.element_size());
    return static_cast<double>(bytes) / (1 << 20);
  };
  std::printf("AdamW step, %.1fM parameters, 1 thread, best of %d\n", static_cast<double>(count) / 1e6, rounds);
  std::printf("tandem::AdamW (fused)      %8.1f ms  state %7.1f MB\n", ours_ms, state_mb(fused));
  std::printf("torch::optim::AdamW        %8.1f ms\n", theirs_ms);
  std::printf("tandem::AdamW, 8-bit state %8.1f ms  state %7.1f MB\n", eight_ms, state_mb(fused8));
  std::printf("torch / fused              %8.2fx\n", theirs_ms / ours_ms);
  std::printf("8-bit / fused              %8.2fx time, %.2fx state\n", eight_ms / ours_ms,
              state_mb(fused8) / state_mb(fused));
  return 0;
}
