#include "tandem/train/plan_command.h"

#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <optional>
#include <sstream>

#include "tandem/config/config.h"
#include "tandem/config/schema.h"
#include "tandem/data/sampler.h"
#include "tandem/dist/dist_keys.h"
#include "tandem/dist/world.h"
#include "tandem/error.h"
#include "tandem/program.h"
#include "tandem/train/plan_gpus.h"
#include "tandem/train/precision.h"

namespace tandem {

void add_plan_keys(Schema& schema) {
  declare_keys<PlanKeys>(schema);
  schema.alias("--gpus", "plan.gpus");
  schema.alias("--shard", "plan.shard");
  schema.alias("--data", "plan.data");
}

namespace {

// A rank's share of a global batch, as the Trainer's BatchSplit holds it
// before the plan cuts it (trainer.cpp, set_up).
int64_t share_of(const TrainKeys& s, int world_size, bool packed) {
  const int64_t micro = s.micro_batch.automatic ? 1 : s.micro_batch.value;
  if (packed) {
    const int64_t global = s.global_batch > 0 ? s.global_batch : micro * s.grad_accum * world_size;
    return (global + world_size - 1) / world_size;
  }
  return micro * (s.global_batch > 0 ? derive_grad_accum(s.global_batch, micro, world_size, s.key) : s.grad_accum);
}

// One dist.shard setting of one model: the plan the run would make, and why
// it does not fit when it does not.
struct Column {
  std::string shard;
  std::optional<MemoryPlan> plan;
  bool fits = false;
  std::string why;
};

// A fixed micro-batch over the budget: what "auto" would take instead.
std::string instead(const PlanStage& stage, const MemoryPlan& plan, const PlanOptions& terms, int64_t share,
                    double budget) {
  TrainKeys automatic = stage.settings;
  // "auto" splits a global batch: the job's own, as its keys make it.
  const std::string global = automatic.global_batch > 0
                                 ? std::string()
                                 : " with " + automatic.key("global_batch") + " = " +
                                       std::to_string(share * terms.world_size) + " (this job's)";
  if (automatic.global_batch <= 0) automatic.global_batch = share * terms.world_size;
  automatic.micro_batch.automatic = true;
  if (automatic.recompute == "none") automatic.recompute = "auto";
  const std::string said = stage.settings.key("micro_batch") + " = " + std::to_string(plan.micro_batch) +
                           " (recompute " + plan.recompute + ") plans " + mb_text(plan.total()) +
                           " MB per rank, more than " + mb_text(budget) + " MB; ";
  try {
    const MemoryPlan p = MemoryFit(*stage.model, stage.activations, automatic, terms, share).resolve(budget);
    return said + automatic.key("micro_batch") + " = \"auto\"" + global + " would take " +
           std::to_string(p.micro_batch) + " (recompute " + p.recompute + ", " + mb_text(p.total()) + " MB)";
  } catch (const UsageError& e) {
    return said + e.what();
  }
}

Column plan_column(const PlanStage& stage, const std::string& shard, const DistKeys& dist,
                   const PlannedDevices& devices, Precision precision, double budget) {
  const int world_size = devices.count;
  const bool cpu = !devices.cuda;
  Column c;
  c.shard = shard;
  try {
    check_master_weights(stage.settings, shard, precision);
    check_auto_micro_batch(stage.settings, world_size, "the job");
    const PlanOptions terms =
        plan_options(stage.settings, shard, dist.bucket_mb, world_size, precision, cpu, stage.fp32_weights);
    const int64_t share = share_of(stage.settings, world_size, stage.packed);
    const MemoryFit fit(*stage.model, stage.activations, stage.settings, terms, share);
    c.plan = fit.resolve(budget);
    c.fits = fit.fits(*c.plan, budget);
    if (!c.fits) {
      c.why = instead(stage, *c.plan, terms, share, budget);
    } else if (!MemoryFit::evaluation_fits(*c.plan, budget)) {
      c.fits = false;
      c.why = MemoryFit::evaluation_over(*c.plan, budget);
    }
  } catch (const UsageError& e) {
    c.why = e.what();
  }
  return c;
}

std::string cut(const MemoryPlan& p, int64_t share, bool packed) {
  if (packed) return std::to_string(p.micro_batch) + " packed sequences";
  return std::to_string(p.micro_batch) + " x accumulation " +
         std::to_string((share + p.micro_batch - 1) / p.micro_batch);
}

void print_table(std::ostream& out, const PlanStage& stage, const std::vector<Column>& columns, int64_t share,
                 double budget) {
  out << "| MB a rank |";
  for (const Column& c : columns) out << " dist.shard = \"" << c.shard << "\" |";
  out << "\n|---|";
  for (size_t i = 0; i < columns.size(); ++i) out << "---|";
  out << "\n";
  const auto row = [&](const std::string& name, const auto& cell) {
    out << "| " << name << " |";
    for (const Column& c : columns) out << " " << (c.plan ? cell(*c.plan) : std::string("-")) << " |";
    out << "\n";
  };
  const auto term = [](int64_t MemoryPlan::*field) {
    return [field](const MemoryPlan& p) { return mb_text(p.*field); };
  };
  row(stage.settings.key("micro_batch"), [&](const MemoryPlan& p) { return cut(p, share, stage.packed); });
  row(stage.settings.key("recompute"), [](const MemoryPlan& p) { return p.recompute; });
  row("weights", term(&MemoryPlan::weights));
  row("gradients", term(&MemoryPlan::gradients));
  row("optimizer", term(&MemoryPlan::optimizer));
  row("of which AdamW's state", term(&MemoryPlan::optimizer_state));
  row("ema", term(&MemoryPlan::ema));
  row("buckets", term(&MemoryPlan::buckets));
  row("casts", term(&MemoryPlan::casts));
  row("activations, start of backward", term(&MemoryPlan::activations));
  row("activations, end of backward", term(&MemoryPlan::activations_end));
  row("total", [](const MemoryPlan& p) { return mb_text(p.total()); });
  row("evaluating: the live weights' copy", term(&MemoryPlan::judged));
  row("evaluating: the task's", term(&MemoryPlan::evaluation));
  row("evaluating: total", [](const MemoryPlan& p) { return mb_text(p.evaluation_total()); });
  out << "| fits in " << (std::isinf(budget) ? std::string("(unknown)") : mb_text(budget)) << " |";
  for (const Column& c : columns) {
    std::string cell = "no";
    if (c.fits && c.plan->activations < 0) {
      cell = "activations unknown";
    } else if (c.fits && std::isinf(budget)) {
      cell = "yes";
    } else if (c.fits) {
      const double most = static_cast<double>(std::max(c.plan->total(), c.plan->evaluation_total()));
      char text[32];
      std::snprintf(text, sizeof text, "yes, %.0f%%", 100.0 * most / budget);
      cell = std::string(text) + (c.plan->evaluation < 0 ? " (evaluation unknown)" : "");
    }
    out << " " << cell << " |";
  }
  out << "\n";
}

// Prints one model's plan; the error `train` would stop with when it does
// not fit under the settings asked about, else empty.
std::string plan_stage(std::ostream& out, const PlanStage& stage, const std::vector<std::string>& shards,
                       const DistKeys& dist, const PlannedDevices& devices, double budget) {
  const Precision precision = resolve_precision(stage.settings.precision, devices.cuda, devices.cc_major);
  if (stage.frozen_base) keep_frozen_in(*stage.model, precision, /*copy_values=*/false);
  const int64_t share = share_of(stage.settings, devices.count, stage.packed);
  out << "\n"
      << stage.name << ": " << stage.inputs << "; " << to_string(precision) << " (" << stage.settings.key("precision")
      << " = \"" << stage.settings.precision << "\"); a rank's share of a step: " << share
      << (stage.packed ? " samples at most" : " samples") << "\n\n";
  std::vector<Column> columns;
  for (const std::string& shard : shards)
    columns.push_back(plan_column(stage, shard, dist, devices, precision, budget));
  print_table(out, stage, columns, share, budget);
  bool any = false;
  std::string why;
  for (const Column& c : columns) {
    any = any || c.fits;
    if (!c.fits) {
      out << "\ndist.shard = \"" << c.shard << "\": " << c.why << "\n";
      why += (why.empty() ? "" : "\n") + stage.name + ", dist.shard = \"" + c.shard + "\": " + c.why;
    }
  }
  return any ? "" : why;
}

}  // namespace

int run_plan(World& world, const Config& config, const std::vector<PlanStage>& stages) {
  const PlanKeys keys = read_keys<PlanKeys>(config);
  const DistKeys dist = dist_settings(config);
  const PlannedDevices devices =
      keys.gpus.empty() ? this_machine(dist.device == "cpu") : parse_gpus(keys.gpus, "plan.gpus");
  const std::vector<std::string> shards = keys.shard == "all"
                                              ? std::vector<std::string>{"none", "optimizer", "gradients"}
                                              : std::vector<std::string>{keys.shard.empty() ? dist.shard : keys.shard};
  const double budget = plan_budget(devices.free_bytes);
  std::ostringstream out;
  out << "plan for " << devices.name << ": " << devices.count << (devices.count == 1 ? " rank" : " ranks") << ", "
      << (devices.free_bytes < 0
              ? std::string("free memory unknown")
              : mb_text(devices.free_bytes) + " MB free a rank" +
                    (devices.cuda && !keys.gpus.empty() ? " after the CUDA context's " + mb_text(kContextBytes)
                                                        : std::string()) +
                    "; a plan fits in " + std::to_string(static_cast<int>(kPlanShare * 100)) + "% of it, " +
                    mb_text(budget) + " MB")
      << "\n";
  std::string refusal;
  for (const PlanStage& stage : stages) {
    const std::string why = plan_stage(out, stage, shards, dist, devices, budget);
    if (!why.empty()) refusal += (refusal.empty() ? "" : "\n") + why;
  }
  if (world.rank() == 0) std::cout << out.str() << std::flush;
  if (!refusal.empty()) throw UsageError("the job does not fit on " + devices.name + ":\n" + refusal);
  return kExitOk;
}

}  // namespace tandem
