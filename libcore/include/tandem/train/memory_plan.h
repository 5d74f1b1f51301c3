#pragma once
// The memory a training step will hold on a rank's device, figured before the
// model goes there: from the model's tensors, the settings and the task's
// estimate of its activations; and the device memory there is to hold it.
//
// From the model's tensors, exact:
//   weights      parameters and buffers, in their own dtype (fp32: autocast
//                computes in half precision from fp32 master weights; a
//                frozen base in the compute precision, Task::frozen_base;
//                under train.master_weights = "sharded" the matrices
//                works_in_half names, precision.h)
//   gradients    one per trainable parameter, in its dtype, made during
//                backward (the optimizer's zero_grad drops them between steps)
//   optimizer    AdamW's two moments per trainable parameter; sharded
//                (dist.shard "optimizer" or "gradients") those of a rank's
//                block of each group (dist/shard.h: 1/world, padded), and
//                the flats of the two consecutive groups the step's
//                all-gather holds at once (the largest such pair);
//                under train.optimizer_state = "8bit" a byte an element and
//                an fp32 scale a block for the tensors it quantises
//                (blockwise8.h), and the step's transients for one group
//                of blocks (adamw.h: 40 bytes an element of it); under
//                sharded masters the fp32 masters of the rank's runs of the
//                half-precision matrices (the shards exist on one rank too,
//                the whole tensors; nothing is gathered there), and the
//                all-gather's flats in their dtype
//   ema          the weights' average, a copy of the trainable parameters
//                and the buffers (train.ema_decay > 0); of sharded masters,
//                a copy of the rank's slices
//   buckets      GradSync's flat buffers, a second copy of the gradients
//                (more than one rank); under dist.shard = "gradients" the
//                rank's gradient blocks, and the flats of the buckets
//                GradSync lets travel and fill at once, four consecutive
//                groups (the largest such four), with the travelling
//                ones' parts (grad_sync.h), while `gradients` is
//                the largest parameter's alone: its .grad lives only until
//                its hook moves it into a bucket. The blocks and their
//                flats are fp32 (dist/shard.h); sharded masters without
//                dist.shard = "gradients" add the fp32 blocks that the step's
//                whole gradients are moved into
//   casts        autocast's half-precision copies of the trainable weights
//                still in fp32, which its matrix products keep for
//                backward (fp16, bf16)
// From the task (Task::activation_bytes), an estimate from shapes of what a
// micro-batch's backward holds besides those, at the two moments its peak
// can come:
//   activations      as backward starts: what the forward kept for it, the
//                    loss's transients (GPT-2's log-softmax over the
//                    vocabulary and its gradients), and the gradients
//                    backward makes first (the ResNet's last stage)
//   activations_end  as backward reaches the first layers, when nearly every
//                    gradient exists: under recomputation the kept block
//                    inputs and one block live again; GPT-2's embedding's
//                    own dense gradient before it joins the tied one
//
// The total is what never leaves (weights, optimizer, ema, buckets) and the
// larger of the two moments: the casts and `activations`, or the gradients
// and `activations_end`. With accumulation every micro-batch after the first
// starts with the gradients of those before it: they join the start too.
// docs/training.md's table gives planned against measured figures
// (tests/bench/bench_memory_plan): within 15% on the CPU in fp32.
//
// Evaluation, a third moment between steps (the gradients dropped, the
// step's flats and transients gone), is planned apart, as its own total:
//   judged       the live weights' copy that evaluation under an EMA keeps
//                while the average sits in the model (trainer_impl.h,
//                JudgedWeights): the trainable parameters and the buffers
//   evaluation   the task's (Activations::evaluation)
// beside the weights, AdamW's state, the ema and what of the buckets
// lives between steps (kept_buckets: GradSync's flats, or under
// dist.shard = "gradients" the rank's gradient blocks alone). It does not
// move micro_batch "auto" (whose rule is the step's, memory_fit.h): an
// evaluation over the budget backs off its own batches when it runs out of
// memory; the plan says so before the run.
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "tandem/obs/metrics.h"
#include "tandem/train/activations.h"

namespace torch::nn {
class Module;
}

namespace tandem {

struct MemoryPlan {
  int64_t weights = 0, gradients = 0, optimizer = 0, ema = 0, buckets = 0, casts = 0;
  // Of `optimizer`, what AdamW keeps between steps (moments, masters'
  // slices), without the flats and transients: AdamW::state_bytes's plan.
  int64_t optimizer_state = 0;
  // -1: the task cannot say; the total then leaves both out.
  int64_t activations = -1, activations_end = 0;
  int64_t judged = 0, kept_buckets = 0;
  int64_t evaluation = -1;  // -1: the task cannot say; no evaluation total then
  std::string evaluation_by;
  bool accumulates = false;  // grad_accum > 1: gradients live through the forward
  int64_t micro_batch = 0;
  std::string recompute = "none";

  void set_activations(const Activations& a) {
    activations = a.start;
    activations_end = a.start < 0 ? 0 : a.end;
    evaluation = a.evaluation;
    evaluation_by = a.evaluation_by;
  }
  int64_t total() const;
  // What lives between steps: weights, AdamW's state, ema, kept_buckets.
  int64_t between_steps() const { return weights + optimizer_state + ema + kept_buckets; }
  // Evaluation's total (above); -1 when the task cannot say.
  int64_t evaluation_total() const { return evaluation < 0 ? -1 : between_steps() + judged + evaluation; }
  // The rows of the per-rank table (one per `free_bytes`, rank order) as text,
  // and the figures in MB as a metrics.jsonl row.
  std::string table(const std::vector<int64_t>& free_bytes, const std::vector<std::string>& devices) const;
  MetricsWriter::Row row(int64_t free_bytes) const;
};

struct PlanOptions {
  int world_size = 1;
  bool half_precision = false;  // autocast in fp16 or bf16
  bool ema = false;
  bool eight_bit = false;  // train.optimizer_state = "8bit"
  bool master_weights = false;            // train.master_weights = "sharded" (with half_precision)
  std::vector<std::string> fp32_weights;  // Task::fp32_weights: kept fp32 under sharded masters
  int64_t grad_accum = 1;  // micro-batches per step on a rank
  std::string shard = "none";    // dist.shard: "optimizer" or "gradients" split state over the ranks
  double bucket_mb = 25;         // dist.bucket_mb: ParamShards' groups
  bool cpu = false;              // the ranks compute on the CPU (ActivationQuery::cpu)
};

// Bytes as whole MB (MiB, rounded), as the plan's tables give them; "?"
// below 0 (a figure the task cannot say).
std::string mb_text(double bytes);

// The plan's figures that come from `model`'s tensors; the activations,
// micro_batch and recompute are the caller's to fill in (set_activations).
MemoryPlan plan_model_memory(torch::nn::Module& model, const PlanOptions& settings);

// What train.micro_batch = "auto" picks for a rank's `share` of a global
// batch: the plan of the largest micro-batch dividing it whose total is at
// most `budget` bytes; without recomputation when `recompute` allows that
// ("none", "auto") and some micro-batch fits so, else recomputing ("blocks",
// or "auto" when none fits without). nullopt when not even micro-batch 1
// fits. `plan_at(micro_batch, recompute)` makes a plan; plans grow with the
// micro-batch, so the first that fits going down is the largest.
using PlanAt = std::function<MemoryPlan(int64_t micro_batch, const std::string& recompute)>;
std::optional<MemoryPlan> fit_micro_batch(int64_t share, double budget, const std::string& recompute,
                                          const PlanAt& plan_at);

// Bytes free for this rank's tensors: on a GPU what the CUDA runtime reports
// free (cudaMemGetInfo), on the CPU the kernel's MemAvailable shared equally
// by `ranks_here` ranks of the node (asked before the model is built, or it
// would count the model's weights twice); -1 when unknown.
int64_t device_free_bytes(bool cuda, int device_index, int ranks_here);

}  // namespace tandem
