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

namespace tandem {
namespace {

constexpr double kMiB = 1024.0 * 1024.0;

double mb(int64_t bytes) { return static_cast<double>(bytes) / kMiB; }

std::string mb_text(int64_t bytes) {
  if (bytes < 0) return "?";
  char text[32];
  std::snprintf(text, sizeof text, "%.0f", mb(bytes));
  return text;
}

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

// AdamW's moments under "8bit" over a rank's runs (codes and a scale a
// block where keeps_8bit says so, fp32 otherwise), with the transients of
// the step's largest group of blocks.
int64_t eight_bit_moments(torch::nn::Module& model, const NamedTensors& params, const std::vector<MomentRun>& runs) {
  const std::vector<std::string> fp32 = embedding_weights(model);
  int64_t bytes = 0, group = 0;
  for (const MomentRun& run : runs) {
    const auto& [name, param] = params[run.param];
    if (keeps_8bit(name, param, fp32)) {
      bytes += 2 * (run.length + 4 * quant_blocks(run.length));
      group = std::max(group, std::min(run.length, AdamW::kStepElements));
    } else {
      bytes += 2 * run.length * static_cast<int64_t>(param.element_size());
    }
  }
  return bytes + AdamW::kStepBytesPerElement * group;
}

// A sharded run's figures (dist/shard.h's layout): a rank's block of each
// group, in bytes, and the group flats' bytes, largest first.
struct ShardFigures {
  int64_t block_bytes = 0;
  std::vector<MomentRun> runs;  // rank 0's
  std::vector<int64_t> flats;
  int64_t largest_flats(size_t n) const {
    int64_t sum = 0;
    for (size_t k = 0; k < flats.size() && k < n; ++k) sum += flats[k];
    return sum;
  }
};

ShardFigures shard_figures(const NamedTensors& params, const PlanOptions& settings) {
  ShardFigures f;
  for (const auto& group : group_params(params, settings.bucket_mb)) {
    std::vector<int64_t> numels;
    for (size_t i : group) numels.push_back(params[i].second.numel());
    const Shard shard =
        shard_of(numels, settings.world_size, 0, settings.eight_bit ? kQuantBlock : ParamShards::kAlign);
    const int64_t size = params[group.front()].second.element_size();
    f.block_bytes += shard.block * size;
    f.flats.push_back(shard.padded * size);
    for (const ShardPiece& piece : shard.pieces) f.runs.push_back({group[piece.tensor], piece.length});
  }
  std::sort(f.flats.rbegin(), f.flats.rend());
  return f;
}

}  // namespace

int64_t MemoryPlan::total() const {
  const int64_t start = casts + std::max<int64_t>(activations, 0) + (accumulates ? gradients : 0);
  const int64_t end = gradients + activations_end;
  return weights + optimizer + ema + buckets + std::max(start, end);
}

std::string MemoryPlan::table(const std::vector<int64_t>& free_bytes, const std::vector<std::string>& devices) const {
  const char* columns[] = {"rank", "device", "weights", "gradients", "optimizer", "ema", "buckets", "casts",
                           "activations", "at end", "total", "free", "use"};
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
        << " | " << mb_text(casts) << " | " << mb_text(activations) << " | " << (activations < 0 ? "?" : mb_text(activations_end)) << " | " << mb_text(total()) << " | "
        << mb_text(free) << " | " << use << " |\n";
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
  if (free_bytes >= 0) r.emplace_back("free_mb", mb(free_bytes));
  return r;
}

MemoryPlan plan_model_memory(torch::nn::Module& model, const PlanOptions& settings) {
  MemoryPlan plan;
  int64_t trainable = 0, trainable_elements = 0, largest = 0;
  for (const auto& p : model.parameters()) {
    plan.weights += bytes_of(p);
    if (!p.requires_grad()) continue;
    trainable += bytes_of(p);
    trainable_elements += p.numel();
    largest = std::max(largest, bytes_of(p));
  }
  int64_t buffers = 0;
  for (const auto& b : model.buffers()) buffers += bytes_of(b);
  plan.weights += buffers;
  plan.gradients = trainable;
  const NamedTensors params = trainable_params(model);
  if (settings.ema) plan.ema = trainable + buffers;
  if (settings.world_size > 1) plan.buckets = trainable;
  const bool sharded = settings.world_size > 1 && settings.shard != "none";
  if (!sharded && settings.eight_bit) {
    std::vector<MomentRun> whole;
    for (size_t i = 0; i < params.size(); ++i) whole.push_back({i, params[i].second.numel()});
    plan.optimizer = eight_bit_moments(model, params, whole);
  } else if (!sharded) {
    plan.optimizer = 2 * trainable;
  }
  if (sharded) {
    const ShardFigures f = shard_figures(params, settings);
    plan.optimizer =
        (settings.eight_bit ? eight_bit_moments(model, params, f.runs) : 2 * f.block_bytes) + f.largest_flats(2);
    if (settings.shard == "gradients") {
      plan.buckets = f.block_bytes + (GradSync::kBucketsInFlight + GradSync::kBucketsFilling) * f.largest_flats(1) +
                     GradSync::kBucketsInFlight * f.largest_flats(1) / settings.world_size;
      plan.gradients = largest;
    }
  }
  if (settings.half_precision) plan.casts = 2 * trainable_elements;
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
