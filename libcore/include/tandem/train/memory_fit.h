#pragma once
// Which micro-batch and recomputation a run's memory plan allows on its
// devices, and what to say when none does: one computation for the Trainer
// (before the model goes to its device) and the plan command (before the run
// is submitted), so that what `plan` promises is what `train` picks.
//
// The rule:
// - A plan fits when its total is at most kPlanShare of the least free
//   memory of a rank (the rest is for what the plan leaves out: the
//   allocator's rounding and fragmentation, cuDNN's and cuBLAS's workspaces),
//   or when the task gives no activation estimate (nothing to judge by).
// - train.micro_batch = "auto" takes the largest micro-batch that divides a
//   rank's share of the global batch and fits, first without recomputation
//   (unless train.recompute = "blocks"), then, under "auto" or "blocks",
//   recomputing. Without recomputation first, because it is faster whenever
//   it fits at all: recomputing runs every block's forward twice, a third
//   more FLOPs a token (2 + 4 for forward and backward, plus 2), while a
//   larger micro-batch gains nothing once a product's rows fill the GPU,
//   which a single sequence of a few hundred tokens already does on a
//   transformer (its products are tokens x width x width).
// - A fixed micro-batch recomputes under "auto" only when it does not fit
//   without.
// - When "auto" finds nothing, UsageError (exit 2) with the smallest plan's
//   terms and each setting that alone would make it fit (why_not).
// - Evaluation is judged apart, by the same share (memory_plan.h: it does
//   not move "auto"); over it, the plan names what sizes it.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "tandem/train/memory_plan.h"
#include "tandem/train/train_keys.h"

namespace torch::nn {
class Module;
}

namespace tandem {

enum class Precision;

// The share of a rank's free memory a plan may fill and still fit.
inline constexpr double kPlanShare = 0.9;

// The bytes a plan may take given the least free memory of a rank (-1:
// unknown, no limit).
double plan_budget(int64_t least_free);

// The plan's terms from a run's settings; `fp32_weights` as Task::fp32_weights.
PlanOptions plan_options(const TrainKeys& settings, const std::string& shard, double bucket_mb, int world_size,
                         Precision precision, bool cpu, std::vector<std::string> fp32_weights);

// A task's activation estimate (Task::activation_bytes).
using ActivationsAt = std::function<Activations(const ActivationQuery&)>;

class MemoryFit {
 public:
  // `model` as the Trainer holds it before it moves to its device (a frozen
  // base already in its precision); `share`: a rank's samples per step
  // (packed: its most sequences).
  MemoryFit(torch::nn::Module& model, ActivationsAt activations, const TrainKeys& settings, PlanOptions terms,
            int64_t share);

  // The plan of a step in micro-batches of `micro_batch`, with the
  // accumulation the share then takes.
  MemoryPlan at(int64_t micro_batch, const std::string& recompute) const { return at(terms_, micro_batch, recompute); }
  MemoryPlan at(PlanOptions terms, int64_t micro_batch, const std::string& recompute) const;
  bool fits(const MemoryPlan& plan, double budget) const;
  // Evaluation's total within `budget`, or unknown (the task cannot say).
  static bool evaluation_fits(const MemoryPlan& plan, double budget);
  // Why evaluation does not fit: its terms and what sizes it.
  static std::string evaluation_over(const MemoryPlan& plan, double budget);
  // What train.micro_batch and train.recompute resolve to within `budget`
  // (the rule above). Throws UsageError when "auto" fits nothing, or cannot
  // judge (a task without an activation estimate).
  MemoryPlan resolve(double budget) const;
  // Why micro-batch "auto" found nothing: `smallest`'s figures, and the
  // settings that each alone would make it fit.
  std::string why_not(const MemoryPlan& smallest, double budget) const;

  int64_t share() const { return share_; }
  const PlanOptions& terms() const { return terms_; }

 private:
  torch::nn::Module& model_;
  ActivationsAt activations_;
  const TrainKeys& settings_;
  PlanOptions terms_;
  int64_t share_;
};

}  // namespace tandem
