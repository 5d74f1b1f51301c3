#include "trainer_impl.h"

#include <array>

namespace tandem {

// The settings against the task and the world, before anything is set up:
// each refusal names the key. It also reads the dist.* keys (and applies
// dist.timeout_s) and the task's metric names, which the checks need.
void Trainer::Impl::check_settings() {
  dist = dist_settings(config);
  world.watchdog().set_timeout(dist.timeout_s);
  if (task.train_size() <= 0) throw UsageError("the training set is empty");
  check_best_metric();
  check_auto_micro_batch(settings, world.size(), config.source(settings.key("global_batch")));
}

// The rank's device and precision, the batch split, the schedule, the run
// record and the communicator. What only the whole set-up can refuse (a
// global batch the micro-batch does not divide, a schedule longer than the
// run, train.resume against out_dir) throws UsageError here, still before
// any work.
void Trainer::Impl::set_up() {
  placement = place_rank(world, dist.device, dist.backend);
  device = c10::Device(placement.torch_device());
  if (placement.cuda) gpu = gpu_info(placement.device_index);
  precision = resolve_precision(settings.precision, placement.cuda, gpu.cc_major);
  check_master_weights(settings, dist.shard, precision);
  if (placement.cuda) set_gpu_math(dist, task.fixed_shapes());
  mfu_precision = precision == Precision::FP32 && tf32_active(dist, gpu.cc_major) ? "tf32" : to_string(precision);

  // Under "auto", micro-batches of 1 until the memory plan picks (plan_memory).
  const int64_t micro_batch = settings.micro_batch.automatic ? 1 : settings.micro_batch.value;
  SamplerOptions so;
  so.dataset_size = task.train_size();
  so.micro_batch = micro_batch;
  so.pack_tokens = task.pack_tokens();
  // Packed, the micro-batch counts sequences: the step's samples are the
  // global batch as given, or as the same keys would give it unpacked.
  if (so.pack_tokens > 0)
    so.global_batch =
        settings.global_batch > 0 ? settings.global_batch : micro_batch * settings.grad_accum * world.size();
  else
    so.grad_accum = settings.global_batch > 0
                        ? derive_grad_accum(settings.global_batch, micro_batch, world.size(), settings.key)
                        : settings.grad_accum;
  so.world_size = world.size();
  so.rank = world.rank();
  seed = shared_seed(world, settings.seed);
  so.seed = seed;
  so.drop_last = task.drop_last();
  so.lengths = task.group_lengths(/*train=*/true);
  so.key = settings.key;
  batches.emplace(so);
  total_steps = settings.max_steps > 0 ? settings.max_steps : settings.epochs * batches->sampler().steps_per_epoch();
  schedule = Schedule{settings.schedule, settings.lr, settings.min_lr, settings.warmup_steps, total_steps};
  schedule.validate(settings.key);

  out_dir = settings.out_dir;
  record.emplace(settings, best_direction);
  // Last, and before the model takes any memory: two ranks on one GPU are
  // refused here (make_communicator), where they would otherwise run out of
  // memory with a large model before the refusal could speak.
  comm = make_communicator(world, placement);
}

// train.best_metric, best_mode and early stopping against the metrics the
// task gives: a misspelt metric would leave the run without a best model and
// its readers silently on the final one; a direction against the metric's,
// with the worst.
void Trainer::Impl::check_best_metric() {
  for (const auto& name : task.metric_names()) metric_names.push_back(kEvalPrefix + name);
  if (settings.best_metric != kNoBestMetric &&
      std::find(metric_names.begin(), metric_names.end(), settings.best_metric) == metric_names.end()) {
    throw UsageError(settings.key("best_metric") + " = \"" + settings.best_metric + "\" is not a metric this evaluation gives (" +
                     first_few(metric_names, metric_names.size()) + "), nor \"" + kNoBestMetric +
                     "\" (keep the final model)");
  }
  best_direction = settings.best_mode == "auto" ? "min" : settings.best_mode;
  if (settings.best_metric != kNoBestMetric) {
    const std::string mode = task.metric_mode(settings.best_metric.substr(std::string(kEvalPrefix).size()));
    if (settings.best_mode == "auto" && mode.empty())
      throw UsageError(settings.key("best_mode") + " = \"auto\" takes the direction of " + settings.best_metric +
                       ", and this task does not say which way it is better: set \"min\" or \"max\"");
    if (settings.best_mode == "auto") best_direction = mode;
    if (!mode.empty() && mode != best_direction)
      throw UsageError(settings.key("best_mode") + " = \"" + settings.best_mode + "\" would keep the worst " +
                       settings.best_metric + ": a " + (mode == "max" ? "larger" : "smaller") +
                       " one is better, so set " + settings.key("best_mode") + " = \"" + mode + "\" (or \"auto\")");
  }
  if (settings.early_stop_patience > 0 && settings.best_metric == kNoBestMetric)
    throw UsageError(settings.key("early_stop_patience") + " = " + std::to_string(settings.early_stop_patience) + " watches " +
                     settings.key("best_metric") + ", which is \"" + kNoBestMetric + "\": name one of " +
                     first_few(metric_names, metric_names.size()) + ", or set " + settings.key("early_stop_patience") +
                     " = 0");
  if (settings.early_stop_patience > 0 && task.eval_size() <= 0)
    throw UsageError(settings.key("early_stop_patience") + " = " + std::to_string(settings.early_stop_patience) +
                     " stops on evaluations, and this run has no evaluation set: give it one, or set " +
                     settings.key("early_stop_patience") + " = 0");
}

void Trainer::Impl::build() {
  // Same seed everywhere, so ranks build identical models before the broadcast
  // that makes sure of it.
  torch::manual_seed(seed);
  // Free memory before the model takes any: on the CPU it would be counted
  // both as taken and as planned.
  const std::vector<std::string> devices = gather_free_memory();
  live_before_model = std::max<int64_t>(tensor_memory(device).live, 0);
  model = task.build_model();
  frozen_base = task.frozen_base();
  if (!frozen_base.empty()) keep_frozen_in_compute_precision();
  plan_memory(devices);
  model->to(device);
  for (const auto& p : model->named_parameters())
    if (p.value().requires_grad()) params.emplace_back(p.key(), p.value());
  weights = frozen_base.empty() ? module_state(*model) : trained_state(*model);
  make_optimizer();
  scaler = std::make_unique<LossScaler>(precision == Precision::FP16);
  bad_steps = std::make_unique<BadSteps>(settings.max_bad_steps, settings.key("max_bad_steps"));
  const std::optional<Checkpoint> resume = record->open_resume();
  if (resume) restore(*resume);
  if (!masters_sharded()) {
    std::vector<at::Tensor> all;
    for (auto& [name, t] : weights) all.push_back(t);
    broadcast_from_rank0(*comm, all);
  }
  if (world.size() > 1)
    sync = std::make_unique<GradSync>(*comm, params, dist.bucket_mb, true, sync_sharded() ? shards.get() : nullptr);
  // Built from the synchronised weights, so every rank averages the same
  // values; a resumed run continues the average it saved.
  if (settings.ema_decay > 0) make_ema(resume ? &*resume : nullptr);
}

// The shards and AdamW over the trainable parameters. Under
// train.master_weights = "sharded" the matrices first become half-precision
// working weights, their fp32 values (the same on every rank: broadcast
// first, since each rank built its own) the masters' first values.
void Trainer::Impl::make_optimizer() {
  AdamWOptions opt;
  opt.beta1 = settings.beta1;
  opt.beta2 = settings.beta2;
  opt.eps = settings.eps;
  opt.weight_decay = settings.weight_decay;
  opt.eight_bit = settings.optimizer_state == "8bit";
  if (opt.eight_bit) opt.fp32_moments = embedding_weights(*model);
  std::vector<at::Tensor> masters;
  if (masters_sharded()) {
    std::vector<at::Tensor> all;
    for (auto& [name, t] : weights) all.push_back(t);
    broadcast_from_rank0(*comm, all);
    masters = to_working_precision(params, precision, kept_in_fp32(*model, task.fp32_weights(*model)));
    int64_t half = 0, elements = 0;
    for (size_t i = 0; i < params.size(); ++i) {
      elements += params[i].second.numel();
      if (masters[i].defined()) half += params[i].second.numel();
    }
    log::info(settings.key("master_weights"), " = \"sharded\": ", half, " of the ", elements,
              " trainable elements work in ", to_string(precision),
              ", their fp32 masters kept in the optimizer, sliced over the ranks");
  }
  if ((dist.shard != "none" && world.size() > 1) || masters_sharded()) {
    // 8-bit moments' blocks must not straddle two ranks (blockwise8.h).
    shards =
        std::make_unique<ParamShards>(*comm, params, dist.bucket_mb, dist.shard == "gradients" || masters_sharded(),
                                      opt.eight_bit ? kQuantBlock : ParamShards::kAlign);
    int64_t elements = 0;
    for (const auto& [name, p] : params) elements += p.numel();
    log::info("dist.shard = \"", dist.shard, "\": this rank updates ", shards->owned_elements(), " of the ", elements,
              " trainable elements and keeps their AdamW moments", grads_sharded() ? " and gradients" : "", " alone");
  }
  optimizer = std::make_unique<AdamW>(
      params, opt, [this](const std::string& n, const at::Tensor& p) { return task.decays(n, p); }, shards.get(),
      masters);
  // The plan is rank 0's: other ranks' runs differ by a few elements.
  constexpr double kMb = 1024.0 * 1024.0;
  if (world.rank() == 0)
    log::info("AdamW keeps ", number_text(std::round(optimizer->state_bytes() / kMb * 10) / 10),
              " MB on rank 0 (moments", optimizer->has_masters() ? ", masters' slices" : "", "); the plan counted ",
              number_text(std::round(plan.optimizer_state / kMb * 10) / 10), " MB");
}

// The average of the weights (train.ema_decay), a resume's continued. Under
// sharded masters AdamW averages the masters' slices, the Ema the rest, and
// a checkpoint's "ema" set holds both whole, as a replicated run's.
void Trainer::Impl::make_ema(const Checkpoint* resume) {
  std::vector<std::string> elsewhere;
  NamedTensors averaged_elsewhere;
  for (size_t i = 0; i < params.size(); ++i) {
    if (!optimizer->has_master(i)) continue;
    elsewhere.push_back(params[i].first);
    averaged_elsewhere.push_back(params[i]);
  }
  ema = std::make_unique<Ema>(*model, elsewhere);
  optimizer->start_average();
  if (!resume || !resume->has_set("ema")) return;
  tandem::restore(*resume, "ema", ema->named_tensors(), averaged_elsewhere);
  if (optimizer->has_average()) optimizer->load_masters(*resume->source("ema"), true);
}

// After a run of half-precision working weights (train.master_weights =
// "sharded"), the model goes back to fp32, its values as they are: apps
// judge and sample from trainer.model() at inference's precision, as after
// a replicated run. The optimizer and shards go first (the masters were the
// one fp32 copy), so that the device holds the model once.
void Trainer::Impl::leave_in_fp32() {
  if (!masters_sharded() || !optimizer) return;
  sync.reset();
  optimizer.reset();
  shards.reset();
  torch::NoGradGuard no_grad;
  for (const auto& [name, p] : params)
    if (p.scalar_type() != at::kFloat)
      p.set_data(p.to(at::kFloat, /*non_blocking=*/false, /*copy=*/false, at::MemoryFormat::Preserve));
}

// Task::frozen_base's rule (keep_frozen_in), before the memory plan counts
// the weights and the model moves to its device, so that no fp32 copy of a
// large base is ever made there. Ranks load the same base file, so the
// frozen weights agree without the broadcast that only the trained state gets.
void Trainer::Impl::keep_frozen_in_compute_precision() {
  check_frozen_base_agrees();
  int64_t frozen = 0, trained = 0;
  for (const auto& p : model->parameters()) (p.requires_grad() ? trained : frozen) += p.numel();
  log::info("frozen base ", frozen_base, ": ", frozen, " frozen elements (matrices in ", to_string(precision), "), ",
            trained, " trained");
  keep_frozen_in(*model, precision);
}

// Each rank loads the base from its own path: on several nodes another file
// at that path would train another model there, silently, since only the
// trained state is broadcast. Every rank sees every rank's checksum, so all
// stop alike.
void Trainer::Impl::check_frozen_base_agrees() {
  constexpr size_t kBytes = 64;
  std::array<char, kBytes> mine{};
  frozen_base.copy(mine.data(), kBytes - 1);
  std::vector<char> all(kBytes * static_cast<size_t>(world.size()));
  world.allgather_bytes(mine.data(), kBytes, all.data());
  for (int r = 0; r < world.size(); ++r) {
    const std::string theirs(all.data() + kBytes * static_cast<size_t>(r));
    if (theirs != std::string(all.data()))
      throw UsageError("the ranks' frozen bases differ: rank 0's is " + std::string(all.data()) + ", rank " +
                       std::to_string(r) + "'s " + theirs + ": give every node the same base files");
  }
}

// The step's micro-batches for this rank, made ahead by a thread: the i-th
// micro-step from first_step's first, found by the steps' counts (fixed
// unless packed).
std::unique_ptr<Loader> Trainer::Impl::make_loader(int64_t first_step) {
  const Sampler& sampler = batches->sampler();
  const int64_t spe = sampler.steps_per_epoch();
  auto starts = std::make_shared<std::vector<int64_t>>(1, 0);
  if (batches->packed())
    for (int64_t step = first_step; step < total_steps; ++step)
      starts->push_back(starts->back() + batches->micro_steps(step));
  const int64_t accum = batches->accum();
  const bool packed = batches->packed();
  auto make = [this, &sampler, spe, accum, starts, first_step, packed](int64_t i) {
    int64_t step = first_step + i / accum, a = i % accum;
    if (packed) {
      const auto next = std::upper_bound(starts->begin(), starts->end(), i);
      step = first_step + (next - starts->begin()) - 1;
      a = i - *(next - 1);
    }
    const auto mb = sampler.micro_batch(step / spe, step % spe, static_cast<int>(a));
    return make_loop_batch(task, mb, true, epoch_seed(seed, step / spe));
  };
  const int64_t count = packed ? starts->back() : (total_steps - first_step) * accum;
  int64_t most = accum;  // micro-steps in a step, at most: two steps' worth are made ahead
  if (packed)
    for (size_t k = 1; k < starts->size(); ++k) most = std::max(most, (*starts)[k] - (*starts)[k - 1]);
  return std::make_unique<Loader>(pinned_for(make, device), 0, count, static_cast<int>(2 * most));
}

// The report, its first row the memory plan.
void Trainer::Impl::start_reporting() {
  report = std::make_unique<TrainReport>(world.rank() == 0, out_dir, settings, record->start_step(), total_steps);
  const int64_t least_free = *std::min_element(free_bytes.begin(), free_bytes.end());
  MetricsWriter::Row row = plan.row(least_free);
  row.insert(row.begin(), {"step", record->start_step()});
  report->row(row);
}

// The step's micro-batches forward and backward, gradients accumulating (and
// synchronising between ranks during the last backward). A rank that runs
// out of memory stops there and says so (f.out_of_memory), after taking its
// part in the collectives the others are in or will reach, so that none
// waits for it; reduce() then tells every rank.
Trainer::Impl::StepFigures Trainer::Impl::forward_backward(DeviceFeed& feed, int64_t step) {
  StepFigures f;
  f.micro_steps = batches->micro_steps(step);
  f.hint_before = weight_hint;
  f.watch_memory = step == record->start_step() && world.rank() == 0;
  f.loss_sum = torch::zeros({}, torch::TensorOptions().dtype(torch::kDouble).device(device));
  f.weight_sum = torch::zeros_like(f.loss_sum);
  const int64_t accum = f.micro_steps;
  for (int64_t a = 0; a < accum; ++a) {
    try {
      micro_step(feed, f, a == accum - 1);
    } catch (const c10::Error& e) {
      if (!is_out_of_memory(e)) throw;
      log::warn("out of memory in micro-batch ", a + 1, " of ", accum, " (", batches->micro_batch(),
                batches->packed() ? " packed sequences" : " samples", "): ", e.what_without_backtrace());
      f.out_of_memory = 1;
      settle_collectives(accum - a, accum);
      return f;
    }
  }
  if (sync && !sync_sharded()) sync->finish();
  if (sync && grads_sharded() && !sync_sharded()) shards->take_gradients();
  return f;
}

// One micro-batch forward and backward; the last one's backward synchronises,
// or every one's when the gradients are sharded.
void Trainer::Impl::micro_step(DeviceFeed& feed, StepFigures& f, bool last) {
  auto [host_batch, batch] = feed.next();
  // Counted on the host copy: on a GPU the count would wait for the device.
  f.tokens += task.tokens_in(host_batch);
  f.computed += task.tokens_computed_in(host_batch);
  f.flops += task.flops_in(host_batch);
  if (f.watch_memory) {
    ActivationQuery query;
    query.micro_batch = batches->micro_batch();
    query.element_bytes = precision == Precision::FP32 ? 4 : 2;
    query.recompute = plan.recompute == "blocks";
    query.cpu = !placement.cuda;
    query.batch = &host_batch;
    const Activations a = task.activation_bytes(query);
    f.seen.start = std::max(f.seen.start, a.start);
    f.seen.end = std::max(f.seen.end, a.end);
  }
  Loss loss;
  {
    AutocastGuard autocast(precision, placement.cuda);
    nn::RecomputeScope recompute(plan.recompute == "blocks");
    loss = task.loss(*model, batch);
  }
  if (weight_hint == 0) weight_hint = first_weight_hint(loss.weight, f.micro_steps);
  // Only now: a loss may differentiate on its own (autograd::grad for an
  // adaptive weight, as vavae's VF loss does), and the gradient sync must
  // not take those gradients for this backward's.
  if (sync) sync->prepare(last || sync_sharded());
  f.loss_sum += loss.sum.detach().to(torch::kDouble);
  f.weight_sum += loss.weight.detach().to(torch::kDouble);
  (loss.sum * (scaler->scale() / weight_hint)).backward();
  if (sync && sync_sharded()) sync->finish();
  // One rank's blocks add up the micro-steps in fp32.
  if (!sync && grads_sharded()) shards->take_gradients();
}

// After running out of memory, the collectives of the step this rank has not
// yet taken part in, in the order the others take them: the first step's
// weight hint, then the gradient buckets not yet launched (GradSync::abandon),
// and with sharded gradients those of each micro-step left after the one
// that failed. What they carry does not matter: every rank drops the step.
void Trainer::Impl::settle_collectives(int64_t micro_steps_left, int64_t micro_steps) {
  if (weight_hint == 0)
    weight_hint = first_weight_hint(torch::zeros({}, torch::TensorOptions().device(device)), micro_steps);
  if (!sync) return;
  for (int64_t k = 0; k < (sync_sharded() ? micro_steps_left : 1); ++k) sync->abandon();
}

// The first micro-batch's loss weight averaged over the ranks, times the
// step's micro-steps: a rank's share of a global batch's weight, as near as the
// first step can know it, rounded to a power of two (a first micro-batch of
// padding only counts its samples instead). Once per run, so one collective
// (and one wait for the device).
double Trainer::Impl::first_weight_hint(const at::Tensor& weight, int64_t micro_steps) {
  auto w = weight.detach().to(torch::kDouble).reshape({1}).clone();
  if (world.size() > 1) comm->allreduce(w, ReduceOp::Avg);
  double share = w.item<double>() * static_cast<double>(micro_steps);
  if (!(share > 0) || !std::isfinite(share)) share = static_cast<double>(batches->share());
  return std::exp2(std::round(std::log2(share)));
}

// The step's one device-to-host copy: the loss sum and weight, token and FLOP
// counts (summed over the ranks) and the gradient norm, which the update
// needs. Gradients are identical on every rank after the sync, so is the
// norm, and with it every rank's decision to step or skip.
void Trainer::Impl::reduce(StepFigures& f, const std::vector<at::Tensor>& grads) {
  const auto options = f.loss_sum.options();
  // Whole gradients are the same on every rank, and so is their norm; a
  // rank's blocks of sharded ones give its part of the sum of squares, which
  // sums over the ranks. Reading it is the step's one host sync; NaN or inf
  // when any gradient is.
  const at::Tensor squares = grad_sum_of_squares(grads).to(options);
  auto reduced =
      torch::stack({f.loss_sum, f.weight_sum, torch::full({}, f.tokens, options), torch::full({}, f.computed, options),
                    torch::full({}, f.flops, options), torch::full({}, f.out_of_memory, options), squares});
  if (world.size() > 1) {
    auto summed = reduced.narrow(0, 0, grads_sharded() ? 7 : 6);
    comm->allreduce(summed, ReduceOp::Sum);
  }
  // The copy waits for the device, and with it for the collectives: one the
  // watchdog aborted meanwhile must not reach the optimizer.
  auto host = reduced.cpu();
  world.watchdog().require_running("the optimizer step");
  f.weight = host[1].item<double>();
  f.tokens = host[2].item<double>();
  f.computed = host[3].item<double>();
  f.flops = host[4].item<double>();
  f.out_of_memory = host[5].item<double>();
  // GradSync averages over the ranks: the gradients hold
  // sum_r grad(loss_sum_r) * scale / (hint * world), the step wants
  // sum_r grad(loss_sum_r) / weight. A global batch of no weight (padding
  // only) teaches nothing.
  const bool weighed = f.weight > 0;
  f.loss = weighed ? host[0].item<double>() / f.weight : 0.0;
  f.grad_factor = weighed ? world.size() * weight_hint / (scaler->scale() * f.weight) : 0.0;
  f.grad_norm = std::sqrt(host[6].item<double>()) * f.grad_factor;
}

// Clips, then steps the optimizer, or skips a step whose gradients are not
// finite; too many skips in a row that no loss scale can cure end the run
// (BadSteps).
void Trainer::Impl::update(int64_t step, const StepFigures& f, const std::vector<at::Tensor>& grads, double lr) {
  const bool finite = std::isfinite(f.grad_norm);
  // torch.nn.utils.clip_grad_norm_'s rule, with the norm already known; one
  // pass over the gradients for it and the step's factor together.
  const double clip = settings.grad_clip > 0 ? settings.grad_clip / (f.grad_norm + 1e-6) : 1.0;
  const double factor = f.grad_factor * std::min(clip, 1.0);
  if (finite && factor != 1.0 && !grads.empty()) {
    torch::NoGradGuard no_grad;
    at::_foreach_mul_(grads, factor);
  }
  if (gradient_hook) gradient_hook(step, params);
  if (f.weight <= 0) {
    // AdamW's momentum and decay would still move the weights.
    log::warn("step ", step + 1, ": the global batch has no loss weight (padding only), update skipped");
    optimizer->zero_grad();
    ++skipped;
    return;
  }
  const bool apply = scaler->update(finite) && finite;
  if (apply) {
    optimizer->step(lr);
    if (ema) ema->update(*model, settings.ema_decay);
    if (ema && optimizer->has_average()) optimizer->update_average(settings.ema_decay);
  }
  optimizer->zero_grad();
  if (!apply) ++skipped;
  bad_steps->after_step(step, apply, f.loss, *scaler, record->checkpoints().dir());
}

// The step's row of the report.
void Trainer::Impl::report_step(int64_t done, const StepFigures& f, double lr, double ms) {
  if (world.rank() != 0) return;
  const Sampler& sampler = batches->sampler();
  MetricsWriter::Row row = {{"step", done},
                            {"epoch", done / sampler.steps_per_epoch()},
                            {"loss", f.loss},
                            {"loss_weight", f.weight},
                            {"lr", lr},
                            {"grad_norm", f.grad_norm},
                            {"loss_scale", scaler->scale()},
                            {"skipped", skipped},
                            {"ms", ms},
                            {"samples_per_s", sampler.global_batch() * 1000.0 / ms}};
  if (const int64_t peak = tensor_memory(device).peak; peak >= 0)
    row.emplace_back("peak_mem_mb", static_cast<double>(std::max(peak, peak_before_evaluation)) / (1024.0 * 1024.0));
  if (f.tokens > 0) row.emplace_back("tokens_per_s", f.tokens * 1000.0 / ms);
  if (f.computed > 0) {
    row.emplace_back("tokens_computed", f.computed);
    row.emplace_back("pad_fraction", 1.0 - f.tokens / f.computed);
    report->count_tokens(f.tokens, f.computed);
  }
  // After reduce()'s copy to the host, so on a GPU the events asked are done.
  if (sync) row.emplace_back("sync_wait_ms", sync->last_wait_ms());
  if (f.flops > 0) {
    const double per_gpu = f.flops * 1000.0 / ms / world.size();
    row.emplace_back("flops_per_s", per_gpu * world.size());
    // On CPU or an unknown GPU there is no peak to compare with: no field.
    if (auto m = mfu(per_gpu, gpu.name, mfu_precision, gpu.sm_count)) row.emplace_back("mfu", *m);
  }
  if (done == record->start_step() + 1) check_plan(f);
  char line[128];
  std::snprintf(line, sizeof line, "loss %.4f lr %.3g %.0f ms/step", f.loss, lr, ms);
  report->step(done, row, line);
}

int Trainer::Impl::loop() {
  const int64_t start_step = record->start_step();
  auto loader = make_loader(start_step);
  auto feed = std::make_unique<DeviceFeed>(*loader, device);
  start_reporting();
  // The first step's peak, not the restore's or the broadcast's.
  reset_tensor_peak(device);
  // One monitor per node: NVML sees every GPU of the node anyway.
  std::unique_ptr<GpuMonitor> monitor;
  if (world.local_rank() == 0 && placement.cuda)
    monitor = report->gpu_monitor(settings.gpu_every_s);

  int64_t finished = total_steps;  // or the step early stopping ended the run at
  for (int64_t step = start_step; step < finished; ++step) {
    if (world.any(preemption_requested())) {
      log::warn("signal ", preemption_signal(), " received: checkpointing at step ", step, " and exiting with status ",
                int(kExitRequeue), " so the job can be requeued");
      save(step);
      report->finish();
      return kExitRequeue;
    }
    // Dropout and other in-model randomness: a function of (seed, rank, step),
    // so a resumed run draws exactly what an uninterrupted one would.
    torch::manual_seed(rank_seed(seed, world.rank()) + static_cast<uint64_t>(step));
    const auto t0 = std::chrono::steady_clock::now();
    const double lr = schedule.at(step);
    StepFigures figures = forward_backward(*feed, step);
    std::vector<at::Tensor> grads;
    for (auto& [name, p] : params)
      if (p.grad().defined()) grads.push_back(p.grad());
    if (grads_sharded()) grads = shards->gradients();
    reduce(figures, grads);
    if (figures.out_of_memory > 0) {
      grads.clear();
      // The loader's thread reads the sampler that back_off replaces.
      feed.reset();
      loader.reset();
      back_off(step, static_cast<int64_t>(figures.out_of_memory), figures.hint_before);
      loader = make_loader(step);
      feed = std::make_unique<DeviceFeed>(*loader, device);
      --step;  // the same step again
      continue;
    }
    update(step, figures, grads, lr);
    // The gradients' last references: evaluation and the checkpoint run
    // without them, as the plan has it (zero_grad dropped the parameters').
    grads.clear();
    const int64_t done = step + 1;
    report_step(done, figures, lr, std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());

    const bool epoch_end = done % batches->sampler().steps_per_epoch() == 0;
    const bool evaluates =
        (settings.eval_every > 0 && done % settings.eval_every == 0) || (settings.eval_every == 0 && epoch_end) || done == total_steps;
    if (evaluates) evaluate_and_track(done);
    const bool stops = evaluates && early_stop(done);
    if ((settings.ckpt_every > 0 && done % settings.ckpt_every == 0) || done == total_steps || stops) save(done);
    if (stops) finished = done;
  }
  report->finish();
  save_final_model(finished);
  if (world.rank() == 0) log::info("done: ", finished, " steps; models in ", (out_dir / "models").string());
  return kExitOk;
}

Trainer::Trainer(World& world, const Config& config, Task& task, TrainKeys settings)
    : impl_(std::make_unique<Impl>(world, config, task, std::move(settings))) {
  impl_->check_settings();
  impl_->set_up();
}

Trainer::~Trainer() = default;

// The error is printed here, before the Impl (its communicator, loader and
// gradient sync) is torn down by the unwinding: see report_error.
int Trainer::run() {
  try {
    const int status = impl_->run();
    impl_->leave_in_fp32();
    return status;
  } catch (const std::exception& e) {
    report_error(impl_->world, e);
    throw;
  }
}

int Trainer::Impl::run() {
  auto& im = *this;
  count_cpu_tensors();
  if (im.world.rank() == 0) {
    fs::create_directories(im.out_dir);
    if (!im.record->resume_from()) im.config.write((im.out_dir / "config.toml").string());
  }
  im.world.barrier();
  log::open_file((im.out_dir / "logs" / ("rank-" + std::to_string(im.world.rank()) + ".log")).string());
  install_preemption_handlers();
  im.build();
  log::info("layout: ", describe_layout(gather_layout(im.world)));
  if (const std::string why = slurm_local_id_mismatch(im.world.local_rank(), std::getenv("SLURM_LOCALID"));
      !why.empty())
    log::warn(why);
  log::info("training on ", im.world.size(), " rank(s), ", im.placement.torch_device(), ", ", im.comm->backend(),
            " backend, ", to_string(im.precision), "; micro batch ", im.batches->describe(),
            im.batches->packed() ? ", global batch " : log::cat(" x world ", im.world.size(), " = global batch "),
            im.batches->sampler().global_batch(), im.batches->packed() ? " rows" : "", "; ", im.total_steps,
            " steps (", im.batches->sampler().steps_per_epoch(), " per epoch)");
  const int64_t start_step = im.record->start_step();
  if (start_step == im.total_steps || im.record->stopped_early()) {
    // The last checkpoint comes before the final model: a run that died
    // between the two (killed, out of disk) is finished here. Rank 0 writes
    // models, so its answer is everyone's.
    const std::string why = im.record->stopped_early() ? "the run stopped early there" : "it is the last step";
    const fs::path final_model = im.out_dir / "models" / "final_model.h5";
    if (im.world.any(im.world.rank() == 0 && !fs::is_regular_file(final_model))) {
      log::info("the checkpoint is at step ", start_step, " and ", why, ": writing the final model it lacks");
      im.save_final_model(start_step);
    } else {
      log::info("nothing to do: the checkpoint is at step ", start_step, " and ", why);
    }
    return kExitOk;
  }
  return im.loop();
}

torch::nn::Module& Trainer::model() { return *impl_->model; }

void Trainer::on_gradients(GradientHook hook) {
  if ((impl_->dist.shard == "gradients" && impl_->world.size() > 1) || impl_->masters_sharded())
    throw std::logic_error(
        "Trainer::on_gradients: under dist.shard = \"gradients\" or train.master_weights = \"sharded\" no "
        "parameter holds its gradient");
  impl_->gradient_hook = std::move(hook);
}

const Metrics& Trainer::last_eval() const { return impl_->last_eval; }

int64_t Trainer::micro_batch() const { return impl_->batches->micro_batch(); }

}  // namespace tandem
