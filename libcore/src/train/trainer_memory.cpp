#include "trainer_impl.h"

namespace tandem {

namespace {

// The share of a rank's free memory a plan may fill and still be said to fit:
// the rest is for what the plan leaves out (the allocator's rounding and
// fragmentation, the CUDA context's workspaces, cuDNN's and cuBLAS's).
constexpr double kPlanShare = 0.9;

}  // namespace

// Every rank's free device memory, in rank order, and the devices' names.
std::vector<std::string> Trainer::Impl::gather_free_memory() {
  const int64_t mine[2] = {device_free_bytes(placement.cuda, placement.device_index, world.local_size()),
                           placement.cuda ? placement.device_index : -1};
  std::vector<int64_t> all(2 * static_cast<size_t>(world.size()));
  world.allgather_bytes(mine, sizeof mine, all.data());
  std::vector<std::string> devices;
  free_bytes.clear();
  for (int r = 0; r < world.size(); ++r) {
    free_bytes.push_back(all[2 * r]);
    devices.push_back(all[2 * r + 1] < 0 ? "cpu" : "cuda:" + std::to_string(all[2 * r + 1]));
  }
  return devices;
}

// Figured from the model while it is still on the host, the same on every
// rank (which all see every rank's free memory): rank 0 logs a row per rank,
// which start_reporting also writes to metrics.jsonl and TensorBoard.
// train.recompute = "auto" recomputes only when the plan does not fit;
// train.micro_batch = "auto" takes the largest micro-batch that fits, and a
// run that fits at none stops here, before the device holds anything.
void Trainer::Impl::plan_memory(const std::vector<std::string>& devices) {
  const int64_t least_free = *std::min_element(free_bytes.begin(), free_bytes.end());
  const double budget = least_free < 0 ? INFINITY : kPlanShare * static_cast<double>(least_free);
  const int64_t share = batches->share();
  const PlanOptions terms = plan_options();
  const PlanAt plan_at = [&](int64_t m, const std::string& recompute) { return plan_for(terms, m, recompute); };
  const auto fits = [&](const MemoryPlan& p) { return p.activations < 0 || p.total() <= budget; };
  if (settings.micro_batch.automatic) {
    if (plan_at(1, "none").activations < 0)
      throw UsageError(settings.key("micro_batch") + " = \"auto\" needs an estimate of the model's activations, which this "
                       "task does not give: set a number");
    const auto chosen = fit_micro_batch(share, budget, settings.recompute, plan_at);
    if (!chosen) throw UsageError(what_would_fit(terms, plan_at(1, settings.recompute == "none" ? "none" : "blocks"), budget));
    plan = *chosen;
    batches->resplit(plan.micro_batch);
    if (world.rank() == 0)
      log::info(settings.key("micro_batch"), " = \"auto\": ", batches->describe(), " (a rank's ", share,
                batches->packed() ? " samples per step at most" : " samples per step", "), the largest whose plan fits in ", static_cast<int>(kPlanShare * 100),
                "% of the least free memory of a rank");
  } else {
    plan = plan_at(batches->micro_batch(), settings.recompute == "auto" ? "none" : settings.recompute);
    if (settings.recompute == "auto" && !fits(plan)) plan = plan_at(batches->micro_batch(), "blocks");
  }
  if (settings.recompute == "auto" && world.rank() == 0)
    log::info(settings.key("recompute"), " = \"auto\": ", plan.recompute);
  if (world.rank() != 0) return;
  log::info("memory plan, MB per rank (micro-batch ", plan.micro_batch, ", ", to_string(precision), ", recompute ",
            plan.recompute, plan.activations < 0 ? "; the task gives no activation estimate" : "", "):\n",
            plan.table(free_bytes, devices));
  if (!fits(plan)) {
    log::warn("the plan (", plan.total() >> 20, " MB) is more than ", static_cast<int>(kPlanShare * 100),
              "% of the least free memory of a rank (", least_free >> 20, " MB): this run may run out of memory; ",
              plan.recompute == "none"
                  ? settings.key("recompute") + " = \"blocks\" would plan " +
                        std::to_string(plan_at(plan.micro_batch, "blocks").total() >> 20) + " MB; "
                  : std::string(),
              "a smaller ", settings.key("micro_batch"), " plans less activation memory, the same global batch through more "
              "accumulation");
  }
}

PlanOptions Trainer::Impl::plan_options() const {
  PlanOptions terms;
  terms.world_size = world.size();
  terms.half_precision = precision != Precision::FP32;
  terms.ema = settings.ema_decay > 0;
  terms.eight_bit = settings.optimizer_state == "8bit";
  terms.master_weights = masters_sharded();
  terms.fp32_weights = task.fp32_weights(*model);
  terms.shard = dist.shard;
  terms.bucket_mb = dist.bucket_mb;
  return terms;
}

// The plan of a step in micro-batches of `micro_batch`, a rank's share of the
// global batch taking the accumulation that needs.
MemoryPlan Trainer::Impl::plan_for(PlanOptions terms, int64_t micro_batch, const std::string& recompute) {
  terms.grad_accum = (batches->share() + micro_batch - 1) / micro_batch;
  MemoryPlan p = plan_model_memory(*model, terms);
  p.micro_batch = micro_batch;
  p.recompute = recompute;
  p.set_activations(task.activation_bytes({micro_batch, terms.half_precision ? 2 : 4, recompute == "blocks"}));
  return p;
}

// Why micro-batch "auto" found nothing: the smallest plan's figures, and the
// settings that each alone would make it fit.
std::string Trainer::Impl::what_would_fit(const PlanOptions& terms, const MemoryPlan& smallest, double budget) {
  const auto mb = [](double bytes) { return std::to_string(static_cast<int64_t>(bytes) >> 20) + " MB"; };
  std::string text = settings.key("micro_batch") + " = \"auto\": the run does not fit even at micro-batch 1 (recompute " +
                     smallest.recompute + "): it plans " + mb(smallest.total()) + " per rank (weights " +
                     mb(smallest.weights) + ", gradients " + mb(smallest.gradients) + ", optimizer " +
                     mb(smallest.optimizer) + ", ema " + mb(smallest.ema) + ", buckets " + mb(smallest.buckets) +
                     ", casts " + mb(smallest.casts) + ", activations " + mb(smallest.activations) + ") against " +
                     mb(budget) + ", " + std::to_string(static_cast<int>(kPlanShare * 100)) +
                     "% of the least free device memory of a rank. ";
  std::vector<std::string> would;
  if (smallest.recompute == "none") {
    const MemoryPlan p = plan_for(terms, 1, "blocks");
    if (p.total() <= budget) would.push_back(settings.key("recompute") + " = \"blocks\" (" + mb(p.total()) + ")");
  }
  if (smallest.ema > 0 && smallest.total() - smallest.ema <= budget)
    would.push_back(settings.key("ema_decay") + " = 0 (" + mb(smallest.total() - smallest.ema) + ")");
  // The least sharding beyond the run's own that fits.
  const std::vector<std::string> shards = {"none", "optimizer", "gradients"};
  const auto now = std::find(shards.begin(), shards.end(), terms.shard);
  for (auto more = now + 1; terms.world_size > 1 && now != shards.end() && more != shards.end(); ++more) {
    PlanOptions sharded = terms;
    sharded.shard = *more;
    const MemoryPlan p = plan_for(sharded, 1, smallest.recompute);
    if (p.total() > budget) continue;
    would.push_back("dist.shard = \"" + *more + "\" (" + mb(p.total()) + ")");
    break;
  }
  if (!terms.eight_bit) {
    PlanOptions eight = terms;
    eight.eight_bit = true;
    const MemoryPlan p = plan_for(eight, 1, smallest.recompute);
    if (p.total() <= budget) would.push_back(settings.key("optimizer_state") + " = \"8bit\" (" + mb(p.total()) + ")");
  }
  if (terms.half_precision && !terms.master_weights) {
    PlanOptions masters = terms;
    masters.master_weights = true;
    if (masters.shard == "none") masters.shard = "gradients";
    const MemoryPlan p = plan_for(masters, 1, smallest.recompute);
    if (p.total() <= budget)
      would.push_back(settings.key("master_weights") + " = \"sharded\"" +
                      (terms.shard == "none" ? " with dist.shard = \"gradients\"" : "") + " (" + mb(p.total()) + ")");
  }
  if (!terms.half_precision) {
    PlanOptions half = terms;
    half.half_precision = true;
    const MemoryPlan p = plan_for(half, 1, smallest.recompute);
    if (p.total() <= budget)
      would.push_back("train.precision = \"bf16\" or \"fp16\" on a GPU (" + mb(p.total()) + ")");
  }
  if (would.empty())
    return text + "No one setting makes it fit: the weights, gradients and optimizer state alone take " +
           mb(smallest.weights + smallest.gradients + smallest.optimizer) + "; it needs a device with more memory, "
           "or a smaller model";
  std::string list;
  for (const std::string& w : would) list += (list.empty() ? "" : "; ") + w;
  return text + "It would fit with: " + list;
}

void Trainer::Impl::replan() { plan = plan_for(plan_options(), batches->micro_batch(), plan.recompute); }

// A run that ran out of memory continues at the micro-batch it backed off to,
// unless it now runs under other settings (oom_context: the micro-batch and
// recomputation set, the precision, the device), which may fit more.
void Trainer::Impl::restore_oom_micro_batch(const Checkpoint& ckpt) {
  if (!ckpt.state.count("oom_micro_batch") || ckpt.get_int("oom_micro_batch") <= 0) return;
  const int64_t cap = ckpt.get_int("oom_micro_batch");
  const std::string then = ckpt.get_string("oom_context");
  if (then != oom_context()) {
    log::info(ckpt.path, " ran out of memory above micro-batch ", cap, " with ", then, "; this run has ", oom_context(),
              ", and starts at its own micro-batch");
    return;
  }
  const int64_t was = batches->micro_batch();
  batches->cap_at(cap);
  if (batches->micro_batch() == was) return;
  replan();
  log::warn("continuing with micro-batch ", batches->describe(),
            ": the run ran out of memory at a larger one with these settings (", ckpt.path, ")");
}

std::string Trainer::Impl::oom_context() const {
  return log::cat(settings.key("micro_batch"), " = ", to_toml_literal(config.get(settings.key("micro_batch"))), ", ",
                  settings.key("recompute"), " = ", to_toml_literal(config.get(settings.key("recompute"))), ", ",
                  to_string(precision), " on ", placement.cuda ? gpu.name : std::string("cpu"),
                  batches->packed() ? ", packed" : "");
}

// Every rank learned in reduce() that `failed_ranks` ran out of memory in
// `step`: the step is dropped (its gradients and its first weight hint
// undone, nothing updated) and the caller runs it again with the micro-batch
// halved, as the rest of the run and its checkpoints will be. With nothing
// smaller to try, the run ends after a checkpoint of the last good step.
void Trainer::Impl::back_off(int64_t step, int64_t failed_ranks, double hint_before) {
  optimizer->zero_grad();
  weight_hint = hint_before;
  // The failed forward passes moved batch-norm statistics: average them anew.
  buffers_averaged_at = -1;
  release_cached_memory(device);
  reset_tensor_peak(device);
  const std::string what =
      log::cat("step ", step + 1, " ran out of memory on ", failed_ranks, " rank(s) at ", settings.key("micro_batch"),
               " ", batches->describe());
  if (!batches->back_off(step)) {
    if (record->saved_at() != step) save(step);
    throw std::runtime_error(log::cat(
        what, ", and there is no smaller micro-batch; the checkpoint of step ", step, " keeps the run. The plan was ",
        plan.total() >> 20, " MB at micro-batch ", plan.micro_batch, " (recompute ", plan.recompute, ") against ",
        *std::min_element(free_bytes.begin(), free_bytes.end()) >> 20, " MB free: set ", settings.key("recompute"),
        " = \"blocks\", lower the precision or use a device with more memory"));
  }
  replan();
  if (world.rank() == 0)
    log::warn(what, ": the step is dropped and run again with micro-batch ", batches->describe(), ", kept for the rest of the run");
}

}  // namespace tandem
