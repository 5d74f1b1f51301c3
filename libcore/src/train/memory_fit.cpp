#include "tandem/train/memory_fit.h"

#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "tandem/error.h"
#include "tandem/train/precision.h"

namespace tandem {

namespace {

// As the plan's tables give sizes: whole MB, rounded.
std::string mb(double bytes) { return mb_text(bytes) + " MB"; }

}  // namespace

double plan_budget(int64_t least_free) {
  return least_free < 0 ? INFINITY : kPlanShare * static_cast<double>(least_free);
}

PlanOptions plan_options(const TrainKeys& settings, const std::string& shard, double bucket_mb, int world_size,
                         Precision precision, bool cpu, std::vector<std::string> fp32_weights) {
  PlanOptions terms;
  terms.cpu = cpu;
  terms.world_size = world_size;
  terms.half_precision = precision != Precision::FP32;
  terms.ema = settings.ema_decay > 0;
  terms.eight_bit = settings.optimizer_state == "8bit";
  terms.master_weights = settings.master_weights == "sharded";
  terms.fp32_weights = std::move(fp32_weights);
  terms.shard = shard;
  terms.bucket_mb = bucket_mb;
  return terms;
}

MemoryFit::MemoryFit(torch::nn::Module& model, ActivationsAt activations, const TrainKeys& settings, PlanOptions terms,
                     int64_t share)
    : model_(model),
      activations_(std::move(activations)),
      settings_(settings),
      terms_(std::move(terms)),
      share_(share) {}

MemoryPlan MemoryFit::at(PlanOptions terms, int64_t micro_batch, const std::string& recompute) const {
  terms.grad_accum = (share_ + micro_batch - 1) / micro_batch;
  MemoryPlan p = plan_model_memory(model_, terms);
  p.micro_batch = micro_batch;
  p.recompute = recompute;
  ActivationQuery query;
  query.micro_batch = micro_batch;
  query.element_bytes = terms.half_precision ? 2 : 4;
  query.recompute = recompute == "blocks";
  query.cpu = terms.cpu;
  p.set_activations(activations_(query));
  return p;
}

bool MemoryFit::fits(const MemoryPlan& plan, double budget) const {
  return plan.activations < 0 || static_cast<double>(plan.total()) <= budget;
}

bool MemoryFit::evaluation_fits(const MemoryPlan& plan, double budget) {
  return plan.evaluation < 0 || static_cast<double>(plan.evaluation_total()) <= budget;
}

std::string MemoryFit::evaluation_over(const MemoryPlan& plan, double budget) {
  return "evaluation plans " + mb(plan.evaluation_total()) + " per rank (weights " + mb(plan.weights) +
         ", AdamW's state " + mb(plan.optimizer_state) + ", ema " + mb(plan.ema) + ", buckets " +
         mb(plan.kept_buckets) + ", the live weights' copy under the EMA " + mb(plan.judged) + ", " +
         plan.evaluation_by + ": " + mb(plan.evaluation) + ") against " + mb(budget) +
         ": the first evaluation would run out of memory and go on at half its batches, or less; lower what sizes it";
}

MemoryPlan MemoryFit::resolve(double budget) const {
  const std::string& recompute = settings_.recompute;
  if (!settings_.micro_batch.automatic) {
    const int64_t m = settings_.micro_batch.value;
    const MemoryPlan plan = at(m, recompute == "auto" ? "none" : recompute);
    return recompute == "auto" && !fits(plan, budget) ? at(m, "blocks") : plan;
  }
  if (at(1, "none").activations < 0)
    throw UsageError(settings_.key("micro_batch") +
                     " = \"auto\" needs an estimate of the model's activations, which "
                     "this task does not give: set a number");
  const auto chosen =
      fit_micro_batch(share_, budget, recompute, [&](int64_t m, const std::string& way) { return at(m, way); });
  if (!chosen) throw UsageError(why_not(at(1, recompute == "none" ? "none" : "blocks"), budget));
  return *chosen;
}

std::string MemoryFit::why_not(const MemoryPlan& smallest, double budget) const {
  const auto& key = settings_.key;
  std::string text = key("micro_batch") + " = \"auto\": the run does not fit even at micro-batch 1 (recompute " +
                     smallest.recompute + "): it plans " + mb(smallest.total()) + " per rank (weights " +
                     mb(smallest.weights) + ", gradients " + mb(smallest.gradients) + ", optimizer " +
                     mb(smallest.optimizer) + ", ema " + mb(smallest.ema) + ", buckets " + mb(smallest.buckets) +
                     ", casts " + mb(smallest.casts) + ", activations " + mb(smallest.activations) + ") against " +
                     mb(budget) + ", " + std::to_string(static_cast<int>(kPlanShare * 100)) +
                     "% of the least free device memory of a rank. ";
  std::vector<std::string> would;
  const auto try_with = [&](const PlanOptions& terms, const std::string& recompute, const std::string& what) {
    const MemoryPlan p = at(terms, 1, recompute);
    if (static_cast<double>(p.total()) > budget) return false;
    would.push_back(what + " (" + mb(p.total()) + ")");
    return true;
  };
  if (smallest.recompute == "none") try_with(terms_, "blocks", key("recompute") + " = \"blocks\"");
  if (smallest.ema > 0 && smallest.total() - smallest.ema <= budget)
    would.push_back(key("ema_decay") + " = 0 (" + mb(smallest.total() - smallest.ema) + ")");
  // The least sharding beyond the run's own that fits.
  const std::vector<std::string> shards = {"none", "optimizer", "gradients"};
  const auto now = std::find(shards.begin(), shards.end(), terms_.shard);
  for (auto more = now + 1; terms_.world_size > 1 && now != shards.end() && more != shards.end(); ++more) {
    PlanOptions sharded = terms_;
    sharded.shard = *more;
    if (try_with(sharded, smallest.recompute, "dist.shard = \"" + *more + "\"")) break;
  }
  if (!terms_.eight_bit) {
    PlanOptions eight = terms_;
    eight.eight_bit = true;
    try_with(eight, smallest.recompute, key("optimizer_state") + " = \"8bit\"");
  }
  if (terms_.half_precision && !terms_.master_weights) {
    PlanOptions masters = terms_;
    masters.master_weights = true;
    if (masters.shard == "none") masters.shard = "gradients";
    try_with(
        masters, smallest.recompute,
        key("master_weights") + " = \"sharded\"" + (terms_.shard == "none" ? " with dist.shard = \"gradients\"" : ""));
  }
  if (!terms_.half_precision) {
    PlanOptions half = terms_;
    half.half_precision = true;
    try_with(half, smallest.recompute, "train.precision = \"bf16\" or \"fp16\" on a GPU");
  }
  if (would.empty())
    return text + "No one setting makes it fit: the weights, gradients and optimizer state alone take " +
           mb(smallest.weights + smallest.gradients + smallest.optimizer) +
           "; it needs a device with more memory, "
           "or a smaller model";
  std::string list;
  for (const std::string& w : would) list += (list.empty() ? "" : "; ") + w;
  return text + "It would fit with: " + list;
}

}  // namespace tandem
