#include "trainer_impl.h"

#include <cmath>

namespace tandem {

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
  const double budget = plan_budget(least_free);
  const MemoryFit fit = memory_fit();
  plan = fit.resolve(budget);
  if (settings.micro_batch.automatic) {
    batches->resplit(plan.micro_batch);
    if (world.rank() == 0)
      log::info(settings.key("micro_batch"), " = \"auto\": ", batches->describe(), " (a rank's ", fit.share(),
                batches->packed() ? " samples per step at most" : " samples per step",
                "), the largest whose plan fits in ", static_cast<int>(kPlanShare * 100),
                "% of the least free memory of a rank");
  }
  if (settings.recompute == "auto" && world.rank() == 0)
    log::info(settings.key("recompute"), " = \"auto\": ", plan.recompute);
  if (world.rank() != 0) return;
  log::info("memory plan, MB per rank (micro-batch ", plan.micro_batch, ", ", to_string(precision), ", recompute ",
            plan.recompute, plan.activations < 0 ? "; the task gives no activation estimate" : "", "):\n",
            plan.table(free_bytes, devices));
  if (!fit.fits(plan, budget)) {
    log::warn("the plan (", plan.total() >> 20, " MB) is more than ", static_cast<int>(kPlanShare * 100),
              "% of the least free memory of a rank (", least_free >> 20, " MB): this run may run out of memory; ",
              plan.recompute == "none" ? settings.key("recompute") + " = \"blocks\" would plan " +
                                             std::to_string(fit.at(plan.micro_batch, "blocks").total() >> 20) + " MB; "
                                       : std::string(),
              "a smaller ", settings.key("micro_batch"),
              " plans less activation memory, the same global batch through more "
              "accumulation");
  }
  if (!MemoryFit::evaluation_fits(plan, budget)) log::warn("memory: ", MemoryFit::evaluation_over(plan, budget));
}

namespace {

// How far `planned` is from `peak`, as a fraction of the peak.
double off_by(int64_t planned, int64_t peak) { return static_cast<double>(planned) / static_cast<double>(peak) - 1.0; }

}  // namespace

void Trainer::Impl::check_plan(const StepFigures& f) {
  const TensorMemory m = tensor_memory(device);
  if (m.peak < 0) return;
  const int64_t peak = m.peak - live_before_model;
  MemoryPlan shapes = plan;
  if (plan.activations >= 0 && f.seen.start >= 0) shapes.set_activations(f.seen);
  log::info("memory: the first step's peak is ", peak >> 20,
            " MB of tensors on rank 0's device over what it held before the model; the plan said ", plan.total() >> 20,
            " MB for the longest inputs the data holds, ", shapes.total() >> 20, " MB for this step's");
  if (shapes.activations < 0 || peak <= 0) return;
  const double off = off_by(shapes.total(), peak);
  if (std::abs(off) <= 0.15) return;
  log::warn("memory: the plan for the first step's shapes (", shapes.total() >> 20, " MB) is ",
            static_cast<int>(std::round(std::abs(off) * 100)), "% ", off > 0 ? "over" : "under", " its measured peak (",
            peak >> 20, " MB). Its terms, MB: weights ", shapes.weights >> 20, ", gradients ", shapes.gradients >> 20,
            ", optimizer ", shapes.optimizer >> 20, ", ema ", shapes.ema >> 20, ", buckets ", shapes.buckets >> 20,
            ", casts ", shapes.casts >> 20, "; the task's activation estimate ", shapes.activations >> 20,
            " as backward starts, ", shapes.activations_end >> 20,
            " as it ends: the plan (and micro_batch = \"auto\") ",
            off > 0 ? "leaves memory unused" : "may pick a micro-batch that runs out of memory");
}

// The plan's evaluation is its worst case (the longest inputs, every
// generated summary at its longest), so it is held to the measured peak
// from above alone: under it by more than 15% warns.
void Trainer::Impl::check_evaluation_plan(int64_t live_before, int64_t measured_peak) {
  if (measured_peak < 0 || world.rank() != 0) return;
  const int64_t live = live_before - live_before_model, peak = measured_peak - live_before_model;
  log::info("memory: the first evaluation began with ", live >> 20,
            " MB of tensors on rank 0's device (the plan "
            "between steps: ",
            plan.between_steps() >> 20, " MB) and peaked at ", peak >> 20, " MB",
            plan.evaluation < 0 ? std::string("; the task gives no estimate of evaluation's")
                                : "; the plan said " + std::to_string(plan.evaluation_total() >> 20) + " MB");
  if (plan.evaluation < 0 || peak <= 0) return;
  const double off = off_by(plan.evaluation_total(), peak);
  if (off >= -0.15) return;
  log::warn("memory: the plan for evaluation (", plan.evaluation_total() >> 20, " MB) is ",
            static_cast<int>(std::round(-off * 100)), "% under its measured peak (", peak >> 20,
            " MB). Its terms, MB: weights ", plan.weights >> 20, ", AdamW's state ", plan.optimizer_state >> 20,
            ", ema ", plan.ema >> 20, ", buckets ", plan.kept_buckets >> 20, ", the live weights' copy ",
            plan.judged >> 20, ", ", plan.evaluation_by, ": ", plan.evaluation >> 20);
}

MemoryFit Trainer::Impl::memory_fit() {
  return MemoryFit(
      *model, [this](const ActivationQuery& q) { return task.activation_bytes(q); }, settings,
      plan_options(settings, dist.shard, dist.bucket_mb, world.size(), precision, !placement.cuda,
                   task.fp32_weights(*model)),
      batches->share());
}

void Trainer::Impl::replan() { plan = memory_fit().at(batches->micro_batch(), plan.recompute); }

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
