#include "trainer_impl.h"

namespace tandem {

void Trainer::Impl::restore(const Checkpoint& ckpt) {
  // First: adapters on another base differ from this run in more than any
  // setting, and the message must say so whatever else changed.
  require_frozen_base(ckpt, frozen_base);
  const std::string& path = ckpt.path;
  const int64_t their_batch = ckpt.get_int("global_batch");
  const int64_t global_batch = batches->sampler().global_batch();
  if (their_batch != global_batch)
    throw UsageError(path + ": trained with a global batch of " + std::to_string(their_batch) + ", this run has " +
                     std::to_string(global_batch) + " (" + settings.key("global_batch") + ", or " +
                     settings.key("micro_batch") + " x grad_accum x ranks); resuming needs the same global "
                     "batch to continue the same sample order");
  const auto their_seed = static_cast<uint64_t>(ckpt.get_int("seed"));
  if (settings.seed < 0 && their_seed != seed) {
    // train.seed = -1 drew a seed when the run began. A requeued job draws
    // again, so it continues with the checkpoint's, or it would refuse its own
    // checkpoint. The model built from the new draw is overwritten just below.
    seed = their_seed;
    batches->reseed(seed);
    log::info(settings.key("seed"), " = -1: continuing with the seed the run drew, ", seed);
  } else if (their_seed != seed) {
    throw UsageError(path + ": trained with train.seed " + std::to_string(their_seed) + ", this run has " +
                     std::to_string(seed));
  }
  if (has_config(ckpt)) {
    try {
      const auto changed =
          changed_settings(config_from_checkpoint(config.schema(), ckpt), config, {"cmd", settings.key("resume")});
      if (!changed.empty()) log::warn(path, " was written with other settings; this run continues with:");
      for (const std::string& line : changed) log::warn("  ", line);
    } catch (const UsageError& e) {
      log::warn("the settings ", path, " was written with cannot be compared with this run's: ", e.what());
    }
  }
  // A tensor at a time, each rank reading what it keeps: the whole weights,
  // and under dist.shard only its runs of the moments (AdamW::load_state).
  tandem::restore(ckpt, "model", weights);
  // Half-precision working weights were rounded from the file's fp32 ones,
  // which are the masters' values (weights_to_write).
  if (optimizer->has_masters()) optimizer->load_masters(*ckpt.source("model"));
  if (const int64_t converted = optimizer->load_state(*ckpt.source("optim")))
    log::info(path, ": the AdamW moments of ", converted, converted == 1 ? " parameter" : " parameters",
              " converted to train.optimizer_state = \"", settings.optimizer_state, "\"");
  scaler->load_state(ckpt.state);
  skipped = ckpt.get_int("skipped_steps");
  if (ckpt.state.count("weight_hint")) weight_hint = ckpt.get_double("weight_hint");
  restore_oom_micro_batch(ckpt);
  record->restore(ckpt);
  if (record->start_step() > total_steps)
    throw UsageError(path + ": already at step " + std::to_string(record->start_step()) + ", past this run's " +
                     std::to_string(total_steps) + " steps");
  log::info("resumed from ", path, " at step ", record->start_step(), " (was ", ckpt.get_int("world_size"), " ranks, now ",
            world.size(), ")");
}

// Batch-norm running statistics follow each rank's own shard: only
// gradients are averaged. Left so, an evaluation would score each rank's
// shard with its own statistics, a checkpoint and a model file would hold
// rank 0's, and the EMA would copy the local ones. PyTorch's DDP broadcasts
// rank 0's buffers before every forward (broadcast_buffers=True), which makes
// them rank 0's everywhere and costs a collective per step. Here the ranks'
// statistics are pooled where they are read instead: before every
// evaluation, checkpoint and model file. A running statistic is a linear
// recursion over batch statistics (r <- (1 - m) r + m b), so the mean of the
// ranks' means, whenever it is taken, is the running mean of the ranks' mean
// batch statistics, and the variance pools as batch_norm_stats.h says:
// every rank's data counts, nothing is paid per step, and training, which
// normalises with batch statistics, is untouched. The EMA's copies are
// pooled alike, and a step's statistics once: the evaluation, checkpoint and
// model file of the last step read the same ones. Other buffers are the same
// on every rank and are left alone.
void Trainer::Impl::average_buffers(int64_t steps_done) {
  if (world.size() == 1 || buffers_averaged_at == steps_done) return;
  buffers_averaged_at = steps_done;
  pool_batch_norm_buffers(*model, ema ? ema->named_tensors() : NamedTensors{}, *comm);
}

void Trainer::Impl::require_whole(const std::string& what) const {
  if (placement.cuda) torch::cuda::synchronize(placement.device_index);
  world.watchdog().require_running(what);
}

// What train.precision resolved to: inference runs the model in it
// (inference_setup.h), where the config may only say "auto". Not for "auto"
// on the CPU, whose fp32 says nothing of the model: a GPU then takes its own.
void Trainer::Impl::record_precision(CheckpointState& state) const {
  if (placement.cuda || settings.precision != "auto") state["precision"] = to_string(precision);
}

NamedTensors Trainer::Impl::with_masters(NamedTensors set, const std::vector<at::Tensor>& whole) const {
  std::map<std::string, at::Tensor> by_name;
  for (size_t i = 0; i < whole.size(); ++i)
    if (whole[i].defined()) by_name.emplace(params[i].first, whole[i]);
  for (auto& [name, tensor] : set)
    if (const auto it = by_name.find(name); it != by_name.end()) tensor = it->second;
  return set;
}

NamedTensors Trainer::Impl::weights_to_write() const {
  if (!optimizer->has_masters()) return weights;
  return with_masters(weights, optimizer->masters(judging && optimizer->has_average()));
}

// The Ema's set, with the masters' averages in their parameters' places:
// laid out as a replicated run's.
NamedTensors Trainer::Impl::ema_to_write() const {
  if (!optimizer->has_average()) return ema->named_tensors();
  std::map<std::string, at::Tensor> own;
  for (const auto& [name, tensor] : ema->named_tensors()) own.emplace(name, tensor);
  NamedTensors set = trained_state(*model);
  for (auto& [name, tensor] : set)
    if (const auto it = own.find(name); it != own.end()) tensor = it->second;
  return with_masters(set, optimizer->masters(true));
}

void Trainer::Impl::save(int64_t steps_done) {
  average_buffers(steps_done);
  // Every rank's part: sharded, the moments (and masters) are gathered to rank 0.
  NamedTensors optim = optimizer->state();
  const NamedTensors model_set = weights_to_write();
  const NamedTensors ema_set = ema ? ema_to_write() : NamedTensors{};
  require_whole("the checkpoint of step " + std::to_string(steps_done));
  if (world.rank() == 0) {
    CheckpointState state = scaler->state();
    state["step"] = steps_done;
    state["epoch"] = steps_done / batches->sampler().steps_per_epoch();
    state["global_batch"] = batches->sampler().global_batch();
    state["world_size"] = int64_t{world.size()};
    state["seed"] = static_cast<int64_t>(seed);
    state["skipped_steps"] = skipped;
    state["weight_hint"] = weight_hint;
    state["oom_micro_batch"] = batches->oom_cap();
    state["oom_context"] = oom_context();
    record->write(state);
    state["config"] = config.to_toml();
    record_precision(state);
    if (!frozen_base.empty()) state["frozen_base"] = frozen_base;
    TensorSets sets = {{"model", model_set}, {"optim", optim}};
    if (ema) sets["ema"] = ema_set;
    const auto path = record->checkpoints().save(steps_done, sets, state);
    log::info("checkpoint ", path);
  }
  record->saved(steps_done);
  // Nobody leaves before rank 0 has written: a rank that exits early makes
  // the launcher kill the others, rank 0 mid-write included.
  world.barrier();
}

// Called with the judged weights in the model: a model file's "model" set is
// what was evaluated (the EMA, with one), so every reader of model files
// (predict, test reports, sampling, model.load) gets it without knowing of EMAs.
void Trainer::Impl::save_model(const std::string& name, int64_t steps_done) {
  const NamedTensors model_set = weights_to_write();
  require_whole("the model file " + name + ".h5");
  if (world.rank() != 0) return;
  CheckpointState state;
  state["step"] = steps_done;
  state["config"] = config.to_toml();
  record_precision(state);
  if (!frozen_base.empty()) state["frozen_base"] = frozen_base;
  fs::create_directories(out_dir / "models");
  TensorSets sets = {{"model", model_set}};
  save_checkpoint((out_dir / "models" / (name + ".h5")).string(), sets, state);
}

// Every rank returns after the file exists: the app reads the run's model
// next (trained_model), on every rank, and without a best model (best_metric
// "none") that is this file.
void Trainer::Impl::save_final_model(int64_t steps_done) {
  average_buffers(steps_done);
  {
    JudgedWeights judged(*this, steps_done);
    save_model("final_model", steps_done);
  }
  world.barrier();
}

std::string trained_model(const std::string& out_dir) {
  for (const char* name : {"best_model.h5", "final_model.h5"}) {
    const fs::path path = fs::path(out_dir) / "models" / name;
    if (fs::is_regular_file(path)) return path.string();
  }
  return "";
}

}  // namespace tandem
