// The memory plan (train/memory_plan.h) against what training takes, on the
// CPU in fp32:
//   build/tests/bench/bench_memory_plan [--steps N] [--only NAME]
// For each model, micro-batch and recompute setting: the plan's activations
// and total, and what was measured over N training steps (default 2: the
// first makes AdamW's moments, the second is a step as every later one) with
// LibTorch's CPU allocator counted (obs/tensor_memory.h): the bytes the
// forward left alive (the first part of the activations at the start of
// backward, without the loss's transients and early gradients), and the peak of all
// live tensor bytes less what was live before the model was built (the total
// the plan estimates). GPT-2 predicts a quarter of each sequence's positions,
// as summarize predicts only the summary.
//
// What a run would plan on GPUs (nothing measured) is `summarize plan
// --gpus t4x2` and its table, tests/bench/plan_t4.sh.
#include <torch/torch.h>

#include <cstdio>
#include <functional>
#include <string>

#include "../unit/plan_accuracy.h"
#include "bench_args.h"
#include "model/dit.h"
#include "model/gpt2.h"
#include "model/vae.h"
#include "model/vae_loss.h"
#include "tandem/nn/resnet.h"
#include "tandem/train/memory_plan.h"

namespace {

namespace F = torch::nn::functional;


double mb(int64_t bytes) { return static_cast<double>(bytes) / (1024.0 * 1024.0); }

struct Case {
  std::string name;
  std::function<std::shared_ptr<torch::nn::Module>()> build;
  // The loss of a micro-batch of the model `build` made.
  std::function<at::Tensor(torch::nn::Module&)> loss;
  // The plan's activation estimate.
  std::function<tandem::Activations(bool recompute)> activations;
};

void measure(const Case& c, bool recompute, int steps) {
  const auto f = plan_accuracy::figures(c.build, c.loss, c.activations, recompute, steps);
  std::printf("| %s | %s | %.0f | %.0f | %.0f | %.0f | %.0f | %.2f |\n", c.name.c_str(), recompute ? "blocks" : "none",
              mb(f.plan.activations), mb(f.plan.activations_end), f.kept / (1024.0 * 1024.0), f.planned / (1024.0 * 1024.0),
              f.measured / (1024.0 * 1024.0), f.ratio());
  std::fflush(stdout);
}

Case gpt2(const std::string& preset, int64_t batch, int64_t seq) {
  const summarize::GPTConfig config = summarize::GPTConfig::preset(preset);
  const int64_t predicted = seq / 4;
  const at::Tensor idx = torch::randint(config.vocab_size, {batch, seq}, torch::kLong);
  // A quarter of each row's positions, its last.
  const at::Tensor at = (torch::arange(batch).unsqueeze(1) * (seq - 1) +
                         torch::arange(seq - 1 - predicted, seq - 1).unsqueeze(0)).reshape({-1});
  const at::Tensor targets = idx.narrow(1, 1, seq - 1).reshape({-1}).index_select(0, at);
  return {"GPT-2 " + preset + ", " + std::to_string(batch) + " x " + std::to_string(seq),
          [config] { return summarize::GPT(config).ptr(); },
          [idx, at, targets](torch::nn::Module& m) {
            auto& model = static_cast<summarize::GPTImpl&>(m);
            const at::Tensor hidden = model.features(idx);
            const at::Tensor h = hidden.narrow(1, 0, hidden.size(1) - 1).reshape({-1, hidden.size(2)}).index_select(0, at);
            return F::cross_entropy(model.head(h).to(torch::kFloat), targets,
                                    F::CrossEntropyFuncOptions().reduction(torch::kSum));
          },
          [config, batch, seq, predicted](bool recompute) {
            return config.activation_bytes({batch, 4, recompute}, seq, predicted);
          }};
}

Case resnet(int64_t size, int64_t batch) {
  tandem::nn::ResNetOptions options;
  options.num_classes = 2;
  options.stem = size < 64 ? "small" : "imagenet";
  const at::Tensor x = torch::randn({batch, 3, size, size});
  const at::Tensor y = torch::randint(2, {batch}, torch::kLong);
  return {"ResNet-18 " + std::to_string(size) + " px, " + std::to_string(batch),
          [options] { return tandem::nn::ResNet(options).ptr(); },
          [x, y](torch::nn::Module& m) {
            return F::cross_entropy(static_cast<tandem::nn::ResNetImpl&>(m).forward(x), y,
                                    F::CrossEntropyFuncOptions().reduction(torch::kSum));
          },
          [options, batch, size](bool recompute) { return options.activation_bytes({batch, 4, recompute}, size); }};
}

Case dit(const std::string& preset, int64_t batch) {
  const vavae::DitOptions options = vavae::DitOptions::preset(preset);
  const at::Tensor x = torch::randn({batch, options.in_channels, options.input_size, options.input_size});
  const at::Tensor t = torch::rand({batch});
  const at::Tensor y = torch::randint(options.num_classes, {batch}, torch::kLong);
  return {"DiT " + preset + ", " + std::to_string(batch), [options] { return vavae::Dit(options).ptr(); },
          [x, t, y](torch::nn::Module& m) { return static_cast<vavae::DitImpl&>(m).forward(x, t, y).pow(2).sum(); },
          [options, batch](bool recompute) { return options.activation_bytes({batch, 4, recompute}); }};
}

Case vae(const std::string& preset, int64_t batch, int64_t size) {
  const vavae::VaeOptions options = vavae::VaeOptions::preset(preset);
  const int64_t f = options.downsample_factor();
  const at::Tensor x = torch::rand({batch, 3, size, size}) * 2 - 1;
  const at::Tensor noise = torch::randn({batch, options.embed_dim, size / f, size / f});
  return {"VAE " + preset + ", " + std::to_string(batch) + " x " + std::to_string(size) + " px",
          [options] { return vavae::Vae(options).ptr(); },
          [x, noise, batch](torch::nn::Module& m) {
            const vavae::VaeOutput out = static_cast<vavae::VaeImpl&>(m).forward(x, noise);
            return vavae::vae_loss(x, out.reconstruction, out.posterior).total * batch;
          },
          [options, batch, size](bool recompute) {
            return options.activation_bytes({batch, 4, recompute}, size);
          }};
}

}  // namespace

int main(int argc, char** argv) {
  int64_t steps = 2;
  std::string only;
  const auto take = [&](const std::string& key, const char* value) {
    if (key == "--steps") steps = std::atoll(value);
    else if (key == "--only")
      only = value;
    else return false;
    return true;
  };
  if (const auto stop = bench::parse_flags(argc, argv, "bench_memory_plan", "[--steps N] [--only NAME]", take))
    return *stop;
  std::printf("| model, micro-batch | recompute | planned activations MB, start of backward | at its end | "
              "kept by forward MB | planned MB | measured peak MB | planned / measured |\n|---|---|---|---|---|---|---|---|\n");
  const Case cases[] = {gpt2("tiny", 8, 256), gpt2("gpt2", 4, 256), gpt2("gpt2-medium", 2, 512),
                        resnet(28, 64),       resnet(224, 16),      dit("tiny", 8),
                        dit("B/1", 4),        vae("tiny", 8, 32),   vae("f16d32", 2, 64)};
  for (const Case& c : cases) {
    if (!only.empty() && c.name.find(only) == std::string::npos) continue;
    for (bool recompute : {false, true}) measure(c, recompute, static_cast<int>(steps));
  }
  return 0;
}
