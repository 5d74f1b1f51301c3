// The memory plan (train/memory_plan.h) against what training takes, on the
// CPU in fp32:
//   build/tests/bench/bench_memory_plan [--steps N] [--only NAME] [--t4 1|2]
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
// --t4 1 prints the plan alone (nothing measured) for GPT-2 124M to XL
// fine-tuned in fp16 on one 15 GB T4, sequences of 1024 tokens (the block
// size: summarize's data.max_tokens = 0) with 64 summary tokens, accumulating
// (jobs/summarize.toml's global batch of 256 is many micro-batches on one
// GPU): the plan at the job's micro-batch of 16 and the largest micro-batch
// that fits, with and without recomputation. A T4 has 15360 MiB, of which the CUDA context and
// cuBLAS leave about 14.9 GiB free; a plan fits in 90% of that (the
// trainer's rule).
#include <torch/torch.h>

#include <cstdio>
#include <functional>
#include <string>

#include "../unit/plan_accuracy.h"
#include "bench_args.h"
#include "model/dit.h"
#include "model/gpt2.h"
#include "tandem/nn/resnet.h"
#include "tandem/train/memory_plan.h"
#include "tandem/train/precision.h"

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

// The plan of GPT-2 `preset` in fp16 on one GPU, from its parameter count
// (GPT-2 has no buffers).
tandem::MemoryPlan gpt2_fp16_plan(const summarize::GPTConfig& config, int64_t micro_batch, bool recompute) {
  const int64_t n = config.num_parameters();
  tandem::MemoryPlan plan;
  plan.weights = plan.gradients = 4 * n;
  plan.optimizer = 8 * n;
  plan.casts = 2 * n;
  plan.accumulates = true;
  plan.micro_batch = micro_batch;
  plan.recompute = recompute ? "blocks" : "none";
  plan.set_activations(config.activation_bytes({micro_batch, 2, recompute}, 1024, 64));
  return plan;
}

void t4_verdicts() {
  const double fits = 0.9 * 14.9 * 1024;  // MB
  std::printf("\n| GPT-2, fp16, 1024 tokens, one T4 | recompute | plan at micro-batch 1 MB | at 16 MB | "
              "largest micro-batch that fits |\n|---|---|---|---|---|\n");
  for (const char* preset : {"gpt2", "gpt2-medium", "gpt2-large", "gpt2-xl"}) {
    const summarize::GPTConfig config = summarize::GPTConfig::preset(preset);
    for (bool recompute : {false, true}) {
      int64_t largest = 0;
      while (largest < 256 && mb(gpt2_fp16_plan(config, largest + 1, recompute).total()) <= fits) ++largest;
      std::printf("| %s | %s | %.0f | %.0f | %s |\n", preset, recompute ? "blocks" : "none",
                  mb(gpt2_fp16_plan(config, 1, recompute).total()), mb(gpt2_fp16_plan(config, 16, recompute).total()),
                  largest == 0 ? "none: does not fit" : std::to_string(largest).c_str());
    }
  }
}

// One row of --t4 2 for `model` under `settings`, with and without recomputation.
void two_t4_rows(const summarize::GPTConfig& config, torch::nn::Module& model, tandem::PlanOptions settings,
                 const std::string& label, bool trains_base) {
  const double fits = 0.9 * 14.9 * 1024;  // MB
  for (bool recompute : {false, true}) {
    const auto plan_at = [&](int64_t micro_batch) {
      tandem::MemoryPlan plan = tandem::plan_model_memory(model, settings);
      plan.micro_batch = micro_batch;
      plan.set_activations(config.activation_bytes({micro_batch, 2, recompute}, 1024, 64, trains_base));
      return plan;
    };
    int64_t largest = 0;
    while (largest < 256 && mb(plan_at(largest + 1).total()) <= fits) ++largest;
    const tandem::MemoryPlan one = plan_at(1);
    std::printf("| %s | %s | %.0f | %.0f | %s |\n", label.c_str(), recompute ? "blocks" : "none", mb(one.total()),
                mb(one.weights + one.gradients + one.optimizer + one.buckets),
                largest == 0 ? "none: does not fit" : std::to_string(largest).c_str());
    std::fflush(stdout);
  }
}

// --t4 2: the same on two T4s (2 ranks) under each dist.shard, with AdamW's
// moments in fp32 and in 8 bits (train.optimizer_state), and under
// "gradients" with sharded masters (train.master_weights), from the
// model's own tensors (plan_model_memory, which knows the shards' layout at
// the default dist.bucket_mb of 25); and under LoRA (rank 8 on all four
// projections, the base frozen in fp16 as the trainer keeps it, unsharded).
void two_t4_verdicts() {
  std::printf(
      "\n| GPT-2, fp16, 1024 tokens, two T4s | training | recompute | plan at micro-batch 1 MB | "
      "weights + gradients + optimizer + buckets MB | largest micro-batch that fits |\n"
      "|---|---|---|---|---|---|\n");
  for (const char* preset : {"gpt2", "gpt2-medium", "gpt2-large", "gpt2-xl"}) {
    const summarize::GPTConfig config = summarize::GPTConfig::preset(preset);
    tandem::PlanOptions settings;
    settings.world_size = 2;
    settings.half_precision = true;
    settings.grad_accum = 2;
    {
      const auto model = summarize::GPT(config).ptr();
      for (const bool eight_bit : {false, true}) {
        settings.eight_bit = eight_bit;
        for (const char* shard : {"none", "optimizer", "gradients"}) {
          settings.shard = shard;
          two_t4_rows(config, *model, settings,
                      std::string(preset) + " | dist.shard = " + shard + (eight_bit ? ", 8-bit state" : ""), true);
        }
        // train.master_weights = "sharded": fp16 working weights, the fp32
        // masters sliced with the moments.
        settings.shard = "gradients";
        settings.master_weights = true;
        two_t4_rows(config, *model, settings,
                    std::string(preset) + " | dist.shard = gradients, sharded masters" +
                        (eight_bit ? ", 8-bit state" : ""),
                    true);
        settings.master_weights = false;
      }
      settings.eight_bit = false;
    }
    summarize::GPT lora(config);
    summarize::LoraKeys adapters;
    adapters.targets = summarize::lora_targets();
    summarize::add_lora(lora, adapters);
    tandem::keep_frozen_in(*lora, tandem::Precision::FP16);
    settings.shard = "none";
    two_t4_rows(config, *lora, settings, std::string(preset) + " | LoRA r = 8, all four", false);
  }
}

}  // namespace

int main(int argc, char** argv) {
  int64_t steps = 2;
  std::string only;
  int t4 = 0;
  const auto take = [&](const std::string& key, const char* value) {
    if (key == "--steps") steps = std::atoll(value);
    else if (key == "--only") only = value;
    else if (key == "--t4")
      t4 = std::atoi(value);
    else return false;
    return true;
  };
  if (const auto stop =
          bench::parse_flags(argc, argv, "bench_memory_plan", "[--steps N] [--only NAME] [--t4 1|2]", take))
    return *stop;
  if (t4 == 1) t4_verdicts();
  if (t4 == 2) two_t4_verdicts();
  if (t4) return 0;
  std::printf("| model, micro-batch | recompute | planned activations MB, start of backward | at its end | "
              "kept by forward MB | planned MB | measured peak MB | planned / measured |\n|---|---|---|---|---|---|---|---|\n");
  const Case cases[] = {gpt2("tiny", 8, 256),      gpt2("gpt2", 4, 256), gpt2("gpt2-medium", 2, 512),
                        resnet(28, 64),            resnet(224, 16),      dit("tiny", 8),
                        dit("B/1", 4)};
  for (const Case& c : cases) {
    if (!only.empty() && c.name.find(only) == std::string::npos) continue;
    for (bool recompute : {false, true}) measure(c, recompute, static_cast<int>(steps));
  }
  return 0;
}
