// What activation recomputation (train.recompute = "blocks") saves and what
// it costs, on the CPU in fp32:
//   build/tests/bench/bench_recompute [--gpt2 PRESET] [--seq T] [--gpt2-batch B] [--dit PRESET]
//       [--dit-batch B] [--steps N]
// For GPT-2 (default the 124M "gpt2", sequences of 256) and the DiT (default
// B/1 on 16x16 latents of 32 channels), per setting: the bytes the forward
// leaves alive for backward (the heap in use after the forward less before
// it, glibc's mallinfo2: every live LibTorch CPU tensor), and the best
// forward + backward time of N steps (default 3, after one warm-up). The
// ratios are blocks over none, measured in the same run.
#include <malloc.h>
#include <torch/torch.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>

#include "bench_args.h"
#include "model/dit.h"
#include "model/gpt2.h"
#include "tandem/nn/recompute.h"

namespace {

double live_mb() {
  const struct mallinfo2 m = mallinfo2();
  return static_cast<double>(m.uordblks + m.hblkhd) / (1024.0 * 1024.0);
}

struct Figures {
  double kept_mb = 0, ms = 1e30;
};

// `loss` builds the forward; the model's gradients are dropped between steps.
Figures measure(torch::nn::Module& model, const std::function<at::Tensor()>& loss, bool recompute, int steps) {
  Figures f;
  for (int i = 0; i <= steps; ++i) {
    model.zero_grad();
    const double before = live_mb();
    const auto t0 = std::chrono::steady_clock::now();
    tandem::nn::RecomputeScope scope(recompute);
    at::Tensor l = loss();
    if (i > 0) f.kept_mb = std::max(f.kept_mb, live_mb() - before);
    l.backward();
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    if (i > 0) f.ms = std::min(f.ms, ms);
  }
  return f;
}

void row(const std::string& what, torch::nn::Module& model, const std::function<at::Tensor()>& loss, int steps) {
  const Figures none = measure(model, loss, false, steps), blocks = measure(model, loss, true, steps);
  std::printf("| %s | %.0f | %.0f | %.2f | %.0f | %.0f | %.2f |\n", what.c_str(), none.kept_mb, blocks.kept_mb,
              blocks.kept_mb / none.kept_mb, none.ms, blocks.ms, blocks.ms / none.ms);
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  std::string gpt2 = "gpt2", dit = "B/1";
  int64_t seq = 256, gpt2_batch = 4, dit_batch = 4, steps = 3;
  const auto take = [&](const std::string& key, const char* value) {
    if (key == "--gpt2") gpt2 = value;
    else if (key == "--dit") dit = value;
    else if (key == "--seq") seq = std::atoll(value);
    else if (key == "--gpt2-batch") gpt2_batch = std::atoll(value);
    else if (key == "--dit-batch") dit_batch = std::atoll(value);
    else if (key == "--steps") steps = std::atoll(value);
    else return false;
    return true;
  };
  const char* usage = "[--gpt2 PRESET|none] [--seq T] [--gpt2-batch B] [--dit PRESET|none] [--dit-batch B] [--steps N]";
  if (const auto stop = bench::parse_flags(argc, argv, "bench_recompute", usage, take)) return *stop;
  torch::manual_seed(0);
  std::printf("| model, micro-batch | kept MB, none | kept MB, blocks | ratio | ms, none | ms, blocks | ratio |\n");
  std::printf("|---|---|---|---|---|---|---|\n");
  if (gpt2 != "none") {
    summarize::GPT model(summarize::GPTConfig::preset(gpt2));
    const at::Tensor idx = torch::randint(50257, {gpt2_batch, seq}, torch::kLong);
    row("GPT-2 " + gpt2 + ", " + std::to_string(gpt2_batch) + " x " + std::to_string(seq), *model,
        [&] { return model->forward(idx).logsumexp(-1).mean(); }, static_cast<int>(steps));
  }
  if (dit != "none") {
    vavae::Dit model(vavae::DitOptions::preset(dit));
    const auto& o = model->options();
    const at::Tensor x = torch::randn({dit_batch, o.in_channels, o.input_size, o.input_size});
    const at::Tensor t = torch::rand({dit_batch});
    const at::Tensor y = torch::randint(o.num_classes, {dit_batch}, torch::kLong);
    row("DiT " + dit + ", " + std::to_string(dit_batch), *model, [&] { return model->forward(x, t, y).pow(2).mean(); },
        static_cast<int>(steps));
  }
  return 0;
}
