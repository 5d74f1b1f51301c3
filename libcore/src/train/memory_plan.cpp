#include "tandem/train/memory_plan.h"

#include <torch/torch.h>

#if TANDEM_TORCH_HAS_CUDA
#include <cuda_runtime_api.h>
#endif

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "tandem/data/sampler.h"
#include "tandem/dist/grad_sync.h"
#include "tandem/dist/shard.h"
#include "tandem/train/adamw.h"
#include "tandem/train/blockwise8.h"
#include "tandem/train/precision.h"

namespace tandem {
namespace {

constexpr double kMiB = 1024.0 * 1024.0;

double mb(int64_t bytes) { return static_cast<double>(bytes) / kMiB; }

int64_t bytes_of(const at::Tensor& t) { return t.numel() * static_cast<int64_t>(t.element_size()); }

// The elements of a trainable parameter (an index into trainable_params) that a
// rank keeps moments of: the whole tensor, or sharded each run it owns.
struct MomentRun {
  size_t param = 0;
  int64_t length = 0;
};

NamedTensors trainable_params(torch::nn::Module& model) {
  NamedTensors params;
  for (const auto& p : model.named_parameters())
    if (p.value().requires_grad()) params.emplace_back(p.key(), p.value());
  return params;
}

// The trainable parameters as the run will hold them: under sharded masters
// the matrices works_in_half names in half precision (shapes alone, on the
// meta device; which half does not matter to a byte count), so that the
// shards group them as the run's ParamShards will.
NamedTensors working_params(torch::nn::Module& model, const NamedTensors& params, const PlanOptions& settings) {
  if (!settings.master_weights) return params;
  const std::vector<std::string> kept = kept_in_fp32(model, settings.fp32_weights);
  NamedTensors working;
  for (const auto& [name, p] : params) {
    if (!works_in_half(name, p, kept)) {
      working.emplace_back(name, p);
      continue;
    }
    working.emplace_back(name,
                         at::empty(p.sizes(), p.options().dtype(at::kHalf).device(at::kMeta)).requires_grad_(true));
  }
  return working;
}

// AdamW's moments under "8bit" over a rank's runs (codes and a scale a
// block where keeps_8bit says so, fp32 otherwise), and the transients of the
// step's largest group of blocks.
struct MomentBytes {
  int64_t kept = 0, transients = 0;
};
MomentBytes eight_bit_moments(torch::nn::Module& model, const NamedTensors& params, const std::vector<MomentRun>& runs) {
  const std::vector<std::string> fp32 = embedding_weights(model);
  MomentBytes bytes;
  int64_t group = 0;
  for (const MomentRun& run : runs) {
    const auto& [name, param] = params[run.param];
    // Decided on the fp32 value the moments are of: a half-precision working
    // weight's master (a plan made again after the conversion).
    const at::Tensor values = param.scalar_type() == at::kFloat
                                  ? param
                                  : at::empty(param.sizes(), param.options().dtype(at::kFloat).device(at::kMeta));
    if (keeps_8bit(name, values, fp32)) {
      bytes.kept += 2 * (run.length + 4 * quant_blocks(run.length));
      group = std::max(group, std::min(run.length, AdamW::kStepElements));
    } else {
      bytes.kept += 2 * run.length * static_cast<int64_t>(values.element_size());
    }
  }
  bytes.transients = AdamW::kStepBytesPerElement * group;
  return bytes;
}

// A sharded run's figures (dist/shard.h's layout): a rank's block of each
// group, in elements, its runs, and each group's flat in the order the
// collectives walk the groups, in bytes of its working dtype and in elements.
struct ShardFigures {
  int64_t block_elements = 0;
  std::vector<MomentRun> runs;  // rank 0's
  std::vector<int64_t> flat_bytes, flat_elements;
};

ShardFigures shard_figures(const NamedTensors& params, const PlanOptions& settings) {
  ShardFigures f;
  for (const auto& group : group_params(params, settings.bucket_mb)) {
    std::vector<int64_t> numels;
    for (size_t i : group) numels.push_back(params[i].second.numel());
    const Shard shard =
        shard_of(numels, settings.world_size, 0, settings.eight_bit ? kQuantBlock : ParamShards::kAlign);
    f.block_elements += shard.block;
    f.flat_bytes.push_back(shard.padded * params[group.front()].second.element_size());
    f.flat_elements.push_back(shard.padded);
    for (const ShardPiece& piece : shard.pieces) f.runs.push_back({group[piece.tensor], piece.length});
  }
  return f;
}

// The most that `n` consecutive groups' figures sum to: what the flats of the
// groups a collective has under way at once hold, since the all-gather
// (two) and GradSync's buckets (travelling and filling) walk the groups in
// order. A model's one huge group (GPT-2's tied embedding, 321 MB in fp32
// for gpt2-xl) so counts once, not once per flat.
int64_t most_at_once(const std::vector<int64_t>& per_group, size_t n) {
  int64_t most = 0;
  for (size_t first = 0; first < per_group.size(); ++first) {
    int64_t sum = 0;
    for (size_t k = first; k < per_group.size() && k < first + n; ++k) sum += per_group[k];
    most = std::max(most, sum);
  }
  return most;
}

}  // namespace

std::string mb_text(double bytes) {
  if (bytes < 0) return "?";
  char text[32];
  std::snprintf(text, sizeof text, "%.0f", bytes / kMiB);
  return text;
}

int64_t MemoryPlan::total() const {
  const int64_t start = casts + std::max<int64_t>(activations, 0) + (accumulates ? gradients : 0);
  const int64_t end = gradients + activations_end;
  return weights + optimizer + ema + buckets + std::max(start, end);
}

std::string MemoryPlan::table(const std::vector<int64_t>& free_bytes, const std::vector<std::string>& devices) const {
  const char* columns[] = {"rank",  "device",      "weights", "gradients", "optimizer",  "ema",  "buckets",
                           "casts", "activations", "at end",  "total",     "evaluating", "free", "use"};
  std::ostringstream out;
  for (const char* c : columns) out << " | " << c;
  out << " |\n";
  for (size_t r = 0; r < free_bytes.size(); ++r) {
    const int64_t free = free_bytes[r];
    std::string use = "?";
    if (free > 0) {
      char text[32];
      std::snprintf(text, sizeof text, "%.0f%%", 100.0 * static_cast<double>(total()) / static_cast<double>(free));
      use = text;
    }
    out << " | " << r << " | " << (r < devices.size() ? devices[r] : "") << " | " << mb_text(weights) << " | "
        << mb_text(gradients) << " | " << mb_text(optimizer) << " | " << mb_text(ema) << " | " << mb_text(buckets)
        << " | " << mb_text(casts) << " | " << mb_text(activations) << " | "
        << (activations < 0 ? "?" : mb_text(activations_end)) << " | " << mb_text(total()) << " | "
        << mb_text(evaluation_total()) << " | " << mb_text(free) << " | " << use << " |\n";
  }
  return out.str();
}

MetricsWriter::Row MemoryPlan::row(int64_t free_bytes) const {
  MetricsWriter::Row r = {{"memory_plan_mb", mb(total())},
                          {"weights_mb", mb(weights)},
                          {"gradients_mb", mb(gradients)},
                          {"optimizer_mb", mb(optimizer)},
                          {"ema_mb", mb(ema)},
                          {"buckets_mb", mb(buckets)},
                          {"casts_mb", mb(casts)},
                          {"micro_batch", micro_batch},
                          {"recompute", recompute}};
  if (activations >= 0) {
    r.emplace_back("activations_mb", mb(activations));
    r.emplace_back("activations_end_mb", mb(activations_end));
  }
  if (evaluation >= 0) r.emplace_back("evaluation_plan_mb", mb(evaluation_total()));
  if (free_bytes >= 0) r.emplace_back("free_mb", mb(free_bytes));
  return r;
}

MemoryPlan plan_model_memory(torch::nn::Module& model, const PlanOptions& settings) {
  MemoryPlan plan;
  for (const auto& p : model.parameters())
    if (!p.requires_grad()) plan.weights += bytes_of(p);
  const NamedTensors params = trainable_params(model);
  const NamedTensors working = working_params(model, params, settings);
  // In the working dtype; `in_fp32`: the elements autocast casts.
  int64_t trainable = 0, in_fp32 = 0, largest = 0;
  for (const auto& [name, p] : working) {
    trainable += bytes_of(p);
    if (p.scalar_type() == at::kFloat) in_fp32 += p.numel();
    largest = std::max(largest, bytes_of(p));
  }
  constexpr int64_t kFp32 = 4;
  int64_t buffers = 0;
  for (const auto& b : model.buffers()) buffers += bytes_of(b);
  plan.weights += trainable + buffers;
  plan.gradients = trainable;
  if (settings.ema) plan.ema = plan.judged = trainable + buffers;
  if (settings.world_size > 1) plan.buckets = plan.kept_buckets = trainable;
  // The moments are fp32 (or 8-bit) whatever the working dtype: counted on
  // the fp32 parameters.
  const bool sharded = settings.master_weights || (settings.world_size > 1 && settings.shard != "none");
  if (!sharded && settings.eight_bit) {
    std::vector<MomentRun> whole;
    for (size_t i = 0; i < params.size(); ++i) whole.push_back({i, params[i].second.numel()});
    const MomentBytes moments = eight_bit_moments(model, params, whole);
    plan.optimizer_state = moments.kept;
    plan.optimizer = moments.kept + moments.transients;
  } else if (!sharded) {
    plan.optimizer = plan.optimizer_state = 2 * trainable;
  }
  if (sharded) {
    const ShardFigures f = shard_figures(working, settings);
    // AdamW keeps the moments and masters of the rank's runs alone, not the
    // blocks' gaps and padding.
    int64_t masters = 0, owned = 0;
    for (const MomentRun& run : f.runs) {
      owned += run.length;
      if (working[run.param].second.scalar_type() != at::kFloat) masters += kFp32 * run.length;
    }
    const MomentBytes moments =
        settings.eight_bit ? eight_bit_moments(model, params, f.runs) : MomentBytes{2 * kFp32 * owned, 0};
    plan.optimizer_state = moments.kept + masters;
    // One rank gathers nothing (sharded masters there).
    plan.optimizer = plan.optimizer_state + moments.transients +
                     (settings.world_size > 1 ? most_at_once(f.flat_bytes, 2) : 0);
    // The average of half-precision weights is of their masters' slices.
    if (settings.ema && settings.master_weights) plan.ema = kFp32 * in_fp32 + buffers + masters;
    if (settings.shard == "gradients" && settings.world_size > 1) {
      const size_t held = GradSync::kBucketsInFlight + GradSync::kBucketsFilling;
      plan.buckets = kFp32 * (f.block_elements + most_at_once(f.flat_elements, held) +
                              most_at_once(f.flat_elements, GradSync::kBucketsInFlight) / settings.world_size);
      plan.gradients = largest;
      plan.kept_buckets = kFp32 * f.block_elements;
    } else if (settings.master_weights) {
      plan.buckets += kFp32 * f.block_elements;
      plan.kept_buckets = plan.buckets;
    }
  }
  if (settings.half_precision) plan.casts = 2 * in_fp32;
  plan.accumulates = settings.grad_accum > 1;
  return plan;
}

std::optional<MemoryPlan> fit_micro_batch(int64_t share, double budget, const std::string& recompute,
                                          const PlanAt& plan_at) {
  std::vector<std::string> ways;
  if (recompute != "blocks") ways.push_back("none");
  if (recompute != "none") ways.push_back("blocks");
  for (const std::string& way : ways)
    for (int64_t m = share; m >= 1; m = split_at_most(share, m - 1)) {
      MemoryPlan plan = plan_at(m, way);
      if (static_cast<double>(plan.total()) <= budget) return plan;
    }
  return std::nullopt;
}

int64_t device_free_bytes(bool cuda, int device_index, int ranks_here) {
#if TANDEM_TORCH_HAS_CUDA
  if (cuda) {
    size_t free = 0, total = 0;
    int previous = 0;
    if (cudaGetDevice(&previous) != cudaSuccess || cudaSetDevice(device_index) != cudaSuccess ||
        cudaMemGetInfo(&free, &total) != cudaSuccess) {
      cudaGetLastError();
      return -1;
    }
    cudaSetDevice(previous);
    return static_cast<int64_t>(free);
  }
#endif
  if (cuda) return -1;
  (void)device_index;
  std::ifstream meminfo("/proc/meminfo");
  for (std::string line; std::getline(meminfo, line);) {
    long long kb = 0;
    if (std::sscanf(line.c_str(), "MemAvailable: %lld kB", &kb) == 1)
      return static_cast<int64_t>(kb) * 1024 / (ranks_here > 0 ? ranks_here : 1);
  }
  return -1;
}

}  // namespace tandem
