#include "trainer_impl.h"

namespace tandem {

// With an EMA the average is judged and picks the best model, as timm does:
// it is the smoother of the two on small, noisy validation sets, and the one
// that is sampled from.
bool Trainer::Impl::evaluate_and_track(int64_t steps_done) {
  const bool first = !evaluated;
  evaluated = true;
  const int64_t live_before = tensor_memory(device).live;
  if (first) {
    peak_before_evaluation = tensor_memory(device).peak;
    reset_tensor_peak(device);
  }
  average_buffers(steps_done);
  JudgedWeights judged(*this, steps_done);
  EvalContext ctx;
  ctx.world = &world;
  ctx.device = device;
  ctx.precision = precision;
  ctx.weights_in_precision = !frozen_base.empty() || masters_sharded();
  ctx.micro_batch = eval_micro_batch > 0 ? std::min(eval_micro_batch, batches->micro_batch()) : batches->micro_batch();
  ctx.backed_off_to = &eval_micro_batch;
  ctx.seed = seed;
  last_eval = evaluate(task, *model, ctx);
  if (first) check_evaluation_plan(live_before, tensor_memory(device).peak);
  if (last_eval.empty()) return false;
  std::string line;
  MetricsWriter::Row row = {{"step", steps_done}};
  for (const auto& [k, v] : last_eval) {
    line += " " + k + " " + std::to_string(v);
    row.emplace_back(k, v);
  }
  log::info("eval at step ", steps_done, ":", line);
  report->row(row);
  std::vector<std::string> given;
  for (const auto& [k, v] : last_eval) given.push_back(k);
  if (!std::is_permutation(given.begin(), given.end(), metric_names.begin(), metric_names.end()))
    throw std::logic_error("the task's metric_names() do not name the metrics its eval_metrics gives");
  if (settings.best_metric == kNoBestMetric) return false;
  if (!record->improves(last_eval.at(settings.best_metric))) return false;
  save_model("best_model", steps_done);
  log::info("new best ", settings.best_metric, " ", record->best(), ": models/best_model.h5");
  return true;
}

// Every rank holds the same reduced evaluation, so decides alike; World::any
// makes sure of it, so that no rank is left waiting in the next step's
// collectives. The last step's evaluation still counts (a resume with more
// steps continues the count), but ends nothing early.
bool Trainer::Impl::early_stop(int64_t steps_done) {
  if (settings.early_stop_patience == 0) return false;
  const bool out_of_patience = record->count(last_eval.at(settings.best_metric));
  record->stop_early(world.any(out_of_patience) && steps_done < total_steps);
  if (!record->stopped_early() || world.rank() != 0) return record->stopped_early();
  log::info("stopping early at step ", steps_done, " of ", total_steps, ": ", settings.best_metric,
            " has not improved on ", record->stop_best(), " by more than ", settings.early_stop_min_delta, " for ",
            record->stop_wait(), " evaluations (", settings.key("early_stop_patience"), ")");
  report->row({{"step", steps_done},
               {"stopped", "early_stop"},
               {"early_stop_best", record->stop_best()},
               {"early_stop_wait", record->stop_wait()}});
  return true;
}

// The first micro-batches of this rank's share of the epoch just trained,
// augmented as in training: the data the live statistics came from.
void Trainer::Impl::recompute_ema_bn_stats(int64_t steps_done) {
  const Sampler& sampler = batches->sampler();
  const int64_t spe = sampler.steps_per_epoch();
  const int64_t epoch = std::max<int64_t>(steps_done - 1, 0) / spe;
  std::vector<std::pair<int64_t, int>> cursors;  // (step in epoch, micro-step)
  for (int64_t s = 0; s < spe && static_cast<int64_t>(cursors.size()) < settings.ema_bn_batches; ++s)
    for (int64_t a = 0, n = sampler.micro_steps(epoch, s); a < n; ++a) cursors.emplace_back(s, static_cast<int>(a));
  const int64_t count = std::min<int64_t>(settings.ema_bn_batches, static_cast<int64_t>(cursors.size()));
  auto forward = [&](int64_t i) {
    const auto [s, a] = cursors[static_cast<size_t>(i)];
    const auto mb = sampler.micro_batch(epoch, s, a);
    auto batch = to_device(make_loop_batch(task, mb, true, epoch_seed(seed, epoch)), device);
    AutocastGuard autocast(precision, placement.cuda);
    (void)task.loss(*model, batch);
  };
  recompute_batch_norm_stats(*model, count, forward, comm.get());
}

}  // namespace tandem
