#include "tandem/train/trainer.h"

#include <torch/torch.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <optional>
#include <set>
#include <stdexcept>

#include "tandem/config/checkpoint_config.h"
#include "tandem/config/config.h"
#include "tandem/data/sampler.h"
#include "tandem/dist/communicator.h"
#include "tandem/dist/cuda_info.h"
#include "tandem/dist/dist_keys.h"
#include "tandem/dist/gpu_math.h"
#include "tandem/dist/grad_sync.h"
#include "tandem/dist/layout.h"
#include "tandem/dist/placement.h"
#include "tandem/dist/seed.h"
#include "tandem/dist/world.h"
#include "tandem/error.h"
#include "tandem/io/checkpoint_dir.h"
#include "tandem/nn/recompute.h"
#include "tandem/obs/gpu_monitor.h"
#include "tandem/obs/log.h"
#include "tandem/obs/metrics.h"
#include "tandem/obs/mfu.h"
#include "tandem/obs/progress.h"
#include "tandem/obs/tensorboard.h"
#include "tandem/obs/tensor_memory.h"
#include "tandem/program.h"
#include "tandem/random.h"
#include "tandem/train/adamw.h"
#include "tandem/train/autocast_guard.h"
#include "tandem/train/bad_steps.h"
#include "tandem/train/batch_norm_stats.h"
#include "tandem/train/ema.h"
#include "tandem/text/first_few.h"
#include "tandem/train/evaluate.h"
#include "tandem/train/loss_scaler.h"
#include "tandem/train/memory_plan.h"
#include "tandem/train/preemption.h"
#include "tandem/train/schedule.h"
#include "tandem/train/train_keys.h"

namespace fs = std::filesystem;

namespace tandem {
namespace {

// The 2-norm of all gradients together, as torch.nn.utils.clip_grad_norm_
// computes it (a norm per tensor, then the norm of those), left on the device:
// reading it is the step's one host sync. NaN or inf when any gradient is.
at::Tensor grad_norm_of(const std::vector<at::Tensor>& grads, const at::TensorOptions& options) {
  if (grads.empty()) return torch::zeros({}, options);
  torch::NoGradGuard no_grad;
  return torch::stack(at::_foreach_norm(grads, 2.0)).norm(2.0).to(options.dtype());
}

// The seed the task gets for an epoch's augmentation: a function of the run's
// seed and the epoch only, hence the same on any world size.
uint64_t epoch_seed(uint64_t seed, int64_t epoch) { return mix_seed(seed, static_cast<uint64_t>(epoch)); }

// The share of a rank's free memory a plan may fill and still be said to fit:
// the rest is for what the plan leaves out (the allocator's rounding and
// fragmentation, the CUDA context's workspaces, cuDNN's and cuBLAS's).
constexpr double kPlanShare = 0.9;

// Errors that running out of device memory raises: the caching allocator's
// OutOfMemoryError; a raw CUDA allocation's "out of memory"
// (cudaErrorMemoryAllocation); cuBLAS's and cuDNN's failing workspaces; the
// CPU allocator's "not enough memory". accelerate's should_reduce_batch_size
// reads the same messages.
bool is_out_of_memory(const c10::Error& e) {
  if (dynamic_cast<const c10::OutOfMemoryError*>(&e)) return true;
  const std::string what = e.what_without_backtrace();
  for (const char* sign : {"out of memory", "CUBLAS_STATUS_ALLOC_FAILED", "CUDNN_STATUS_ALLOC_FAILED",
                           "not enough memory"})
    if (what.find(sign) != std::string::npos) return true;
  return false;
}

}  // namespace

struct Trainer::Impl {
  World& world;
  const Config& config;
  Task& task;
  TrainSettings s;
  DistSettings dist;
  Placement placement;
  std::unique_ptr<Communicator> comm;
  Precision precision = Precision::FP32;
  c10::Device device = c10::Device(c10::kCPU);
  uint64_t seed = 0;

  fs::path out_dir;
  std::optional<CheckpointDir> checkpoints;  // out_dir/checkpoints, set up with the run
  std::optional<std::string> resume_from;

  std::shared_ptr<torch::nn::Module> model;
  NamedTensors params;   // trainable, in registration order
  NamedTensors weights;  // parameters and buffers: what a checkpoint holds
  std::unique_ptr<AdamW> optimizer;
  std::unique_ptr<LossScaler> scaler;
  std::unique_ptr<GradSync> sync;
  std::unique_ptr<Ema> ema;  // only with train.ema_decay > 0
  std::unique_ptr<Sampler> sampler;
  Schedule schedule;
  int64_t accum = 1, total_steps = 0, start_step = 0;
  // A power of two near a rank's share of a global batch's loss weight, the
  // same on every rank: backward runs on loss sums divided by it, so
  // gradients have the magnitude a per-rank mean gave them (fp16's range)
  // before the step knows its weight, and dividing by a power of two changes
  // no bit. 0 until the first step sets it; kept in checkpoints, so that a
  // resumed fp16 run rounds as an uninterrupted one.
  double weight_hint = 0;
  Trainer::GradientHook gradient_hook;
  double best = std::nan("");
  int64_t skipped = 0;
  // The micro-batch an out-of-memory back-off left the run at, kept in
  // checkpoints with the settings it ran out under (oom_context), so that a
  // resumed run under them does not run out again; 0: none.
  int64_t oom_micro_batch = 0;
  int64_t saved_at = -1;  // the step of the run's newest checkpoint
  // Early stopping (train.early_stop_patience): the best value that counted
  // as an improvement, the evaluations since, and whether the run ended so.
  // Kept in checkpoints, so a requeued run keeps its patience.
  double stop_best = std::nan("");
  int64_t stop_wait = 0;
  bool stopped_early = false;
  std::unique_ptr<BadSteps> bad_steps;
  Metrics last_eval;
  std::vector<std::string> metric_names;  // the task's, prefixed as evaluate gives them

  // Rank 0's outputs while training.
  std::unique_ptr<MetricsWriter> metrics;
  std::unique_ptr<TensorBoardWriter> tensorboard;  // with obs.tensorboard
  // The last step reported, for the GPU monitor's thread to file its samples under.
  std::atomic<int64_t> reported_step{0};
  std::unique_ptr<Progress> progress;
  // The memory plan, each rank's free device memory when it was made, and
  // the device's tensor bytes then, which the measured peak is compared from.
  MemoryPlan plan;
  std::vector<int64_t> free_bytes;
  int64_t live_before_model = 0;
  GpuInfo gpu;  // the rank's GPU, for precision and MFU; no name on the CPU
  std::string mfu_precision;  // the peak MFU compares with: tf32 for fp32 with TF32 on

  Impl(World& w, const Config& c, Task& t, TrainSettings settings)
      : world(w), config(c), task(t), s(std::move(settings)) {}

  void check_settings();
  void plan_memory(const std::vector<std::string>& devices);
  MemoryPlan plan_for(PlanSettings settings, int64_t micro_batch, const std::string& recompute);
  std::string what_would_fit(const PlanSettings& settings, const MemoryPlan& smallest, double budget);
  void resplit(int64_t micro_batch);
  PlanSettings plan_settings() const;
  std::string oom_context() const;
  void back_off(int64_t step, int64_t failed_ranks, double hint_before);
  std::vector<std::string> gather_free_memory();
  void build();
  void restore(const Checkpoint& ckpt);
  void restore_oom_micro_batch(const Checkpoint& ckpt);
  void save(int64_t steps_done);
  void save_model(const std::string& name, int64_t steps_done);
  void save_final_model(int64_t steps_done);
  bool evaluate_and_track(int64_t steps_done);
  bool early_stop(int64_t steps_done);
  // Whether best_metric's `value` is better than `than` by more than
  // `delta`, in train.best_mode's direction: the one rule of the best model
  // and of early stopping.
  bool beats(double value, double than, double delta) const {
    return s.best_mode == "max" ? value > than + delta : value < than - delta;
  }

  void recompute_ema_bn_stats(int64_t steps_done);
  void average_buffers(int64_t steps_done);
  int64_t buffers_averaged_at = -1;  // the step whose buffers were last averaged

  // While alive, the model holds the weights a run is judged by: the EMA when
  // there is one (with batch-norm statistics of its own under
  // train.ema_bn_batches), else the live weights. The live ones come back
  // bitwise on leaving, so the next step (and a checkpoint) sees no difference.
  class JudgedWeights {
   public:
    JudgedWeights(Impl& im, int64_t steps_done) : im_(im) {
      if (!im_.ema) return;
      {
        torch::NoGradGuard no_grad;
        for (const auto& [name, t] : im_.weights) live_.push_back(t.clone());
        im_.ema->copy_to(*im_.model);
      }
      if (im_.s.ema_bn_batches > 0) im_.recompute_ema_bn_stats(steps_done);
    }
    ~JudgedWeights() {
      torch::NoGradGuard no_grad;
      for (size_t i = 0; i < live_.size(); ++i) im_.weights[i].second.copy_(live_[i]);
    }
    JudgedWeights(const JudgedWeights&) = delete;
    JudgedWeights& operator=(const JudgedWeights&) = delete;

   private:
    Impl& im_;
    std::vector<at::Tensor> live_;
  };

  // What one optimizer step did, summed over the ranks.
  struct StepFigures {
    // On the device, until the step's one copy to the host.
    at::Tensor loss_sum, weight_sum;
    double loss = 0, weight = 0, tokens = 0, flops = 0, grad_norm = 0;
    // What turns the synchronised gradients into those of the step's
    // objective: undoes the loss scale and the hint, divides by the weight.
    double grad_factor = 0;
    // Ranks that ran out of memory in the step (this rank's alone until
    // reduce()), and the weight hint before it, which a dropped step undoes.
    double out_of_memory = 0, hint_before = 0;
  };
  std::unique_ptr<Loader> make_loader(int64_t first_step);
  void start_reporting();
  StepFigures forward_backward(DeviceFeed& feed);
  void micro_step(DeviceFeed& feed, StepFigures& f, bool last);
  void settle_collectives();
  double first_weight_hint(const at::Tensor& weight);
  void reduce(StepFigures& f, const std::vector<at::Tensor>& grads);
  void update(int64_t step, const StepFigures& f, const std::vector<at::Tensor>& grads, double lr);
  void report(int64_t done, const StepFigures& f, double lr, double ms);
  int loop();
  int run();
};

void Trainer::Impl::check_settings() {
  dist = dist_settings(config);
  world.watchdog().set_timeout(dist.timeout_s);
  placement = place_rank(world, dist.device, dist.backend);
  device = c10::Device(placement.torch_device());
  if (placement.cuda) gpu = gpu_info(placement.device_index);
  precision = resolve_precision(s.precision, placement.cuda, gpu.cc_major);
  if (placement.cuda) set_gpu_math(dist, task.fixed_shapes());
  mfu_precision = precision == Precision::FP32 && tf32_active(dist, gpu.cc_major) ? "tf32" : to_string(precision);

  if (task.train_size() <= 0) throw UsageError("the training set is empty");
  for (const auto& name : task.metric_names()) metric_names.push_back(kEvalPrefix + name);
  // A misspelt metric would leave the run without a best model and its
  // readers silently on the final one.
  if (s.best_metric != kNoBestMetric &&
      std::find(metric_names.begin(), metric_names.end(), s.best_metric) == metric_names.end()) {
    throw UsageError(s.key("best_metric") + " = \"" + s.best_metric + "\" is not a metric this evaluation gives (" +
                     first_few(metric_names, metric_names.size()) + "), nor \"" + kNoBestMetric +
                     "\" (keep the final model)");
  }
  if (s.early_stop_patience > 0 && s.best_metric == kNoBestMetric)
    throw UsageError(s.key("early_stop_patience") + " = " + std::to_string(s.early_stop_patience) + " watches " +
                     s.key("best_metric") + ", which is \"" + kNoBestMetric + "\": name one of " +
                     first_few(metric_names, metric_names.size()) + ", or set " + s.key("early_stop_patience") +
                     " = 0");
  if (s.early_stop_patience > 0 && task.eval_size() <= 0)
    throw UsageError(s.key("early_stop_patience") + " = " + std::to_string(s.early_stop_patience) +
                     " stops on evaluations, and this run has no evaluation set: give it one, or set " +
                     s.key("early_stop_patience") + " = 0");
  if (s.micro_batch.automatic) {
    if (s.global_batch <= 0)
      throw UsageError(s.key("micro_batch") + " = \"auto\" splits a rank's share of " + s.key("global_batch") +
                       ", which is not set (" + config.source(s.key("global_batch")) +
                       "): set it to the samples per optimizer step over all ranks");
    if (s.global_batch % world.size() != 0)
      throw UsageError(s.key("global_batch") + " = " + std::to_string(s.global_batch) + " must be a multiple of the " +
                       std::to_string(world.size()) + " ranks for " + s.key("micro_batch") + " = \"auto\" to split");
    s.micro_batch.value = 1;  // until the memory plan picks (plan_memory)
  }
  accum = s.global_batch > 0 ? derive_grad_accum(s.global_batch, s.micro_batch.value, world.size(), s.key)
                             : s.grad_accum;
  SamplerOptions so;
  so.dataset_size = task.train_size();
  so.micro_batch = s.micro_batch.value;
  so.grad_accum = accum;
  so.world_size = world.size();
  so.rank = world.rank();
  seed = shared_seed(world, s.seed);
  so.seed = seed;
  so.drop_last = task.drop_last();
  so.key = s.key;
  sampler = std::make_unique<Sampler>(so);
  total_steps = s.max_steps > 0 ? s.max_steps : s.epochs * sampler->steps_per_epoch();
  schedule = Schedule{s.schedule, s.lr, s.min_lr, s.warmup_steps, total_steps};
  schedule.validate(s.key);

  out_dir = s.out_dir;
  checkpoints.emplace((out_dir / "checkpoints").string(), static_cast<int>(s.keep_last));
  if (s.resume == "auto") {
    resume_from = checkpoints->latest();
  } else if (s.resume == "none") {
    if (auto latest = checkpoints->latest())
      throw UsageError("train.out_dir '" + out_dir.string() + "' already holds checkpoints (latest " + *latest +
                       "): set train.resume = \"auto\" to continue that run, or choose "
                       "another train.out_dir");
  } else {
    if (!fs::is_regular_file(s.resume)) throw UsageError("train.resume: checkpoint '" + s.resume + "' not found");
    resume_from = s.resume;
  }
  // Last of the checks, and before the model takes any memory: two ranks on
  // one GPU are refused here (make_communicator), where they would otherwise
  // run out of memory with a large model before the refusal could speak.
  comm = make_communicator(world, placement);
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
  plan_memory(devices);
  model->to(device);
  for (const auto& p : model->named_parameters()) {
    weights.emplace_back(p.key(), p.value());
    if (p.value().requires_grad()) params.emplace_back(p.key(), p.value());
  }
  for (const auto& b : model->named_buffers()) weights.emplace_back(b.key(), b.value());

  AdamWOptions opt;
  opt.beta1 = s.beta1;
  opt.beta2 = s.beta2;
  opt.eps = s.eps;
  opt.weight_decay = s.weight_decay;
  optimizer = std::make_unique<AdamW>(params, opt,
                                      [this](const std::string& n, const at::Tensor& p) { return task.decays(n, p); });
  scaler = std::make_unique<LossScaler>(precision == Precision::FP16);
  bad_steps = std::make_unique<BadSteps>(s.max_bad_steps, s.key("max_bad_steps"));
  std::optional<Checkpoint> resume;
  if (resume_from && s.resume == "auto") {
    resume = checkpoints->load_latest([](const std::string& path, const std::string& why) {
      log::warn("passing over ", path, ", which does not read back whole: ", why);
    });
  } else if (resume_from) {
    resume = load_checkpoint(*resume_from);
  }
  if (resume) restore(*resume);
  std::vector<at::Tensor> all;
  for (auto& [name, t] : weights) all.push_back(t);
  broadcast_from_rank0(*comm, all);
  if (world.size() > 1) sync = std::make_unique<GradSync>(*comm, params, dist.bucket_mb);
  // Built from the synchronised weights, so every rank averages the same
  // values; a resumed run continues the average it saved.
  if (s.ema_decay > 0) {
    ema = std::make_unique<Ema>(*model);
    if (resume && resume->sets.count("ema")) tandem::restore(*resume, "ema", ema->named_tensors());
  }
}

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
  const int64_t share = s.micro_batch.value * accum;
  const PlanSettings settings = plan_settings();
  const PlanAt plan_at = [&](int64_t m, const std::string& recompute) { return plan_for(settings, m, recompute); };
  const auto fits = [&](const MemoryPlan& p) { return p.activations < 0 || p.total() <= budget; };
  if (s.micro_batch.automatic) {
    if (plan_at(1, "none").activations < 0)
      throw UsageError(s.key("micro_batch") + " = \"auto\" needs an estimate of the model's activations, which this "
                       "task does not give: set a number");
    const auto chosen = fit_micro_batch(share, budget, s.recompute, plan_at);
    if (!chosen) throw UsageError(what_would_fit(settings, plan_at(1, s.recompute == "none" ? "none" : "blocks"), budget));
    plan = *chosen;
    resplit(plan.micro_batch);
    if (world.rank() == 0)
      log::info(s.key("micro_batch"), " = \"auto\": ", plan.micro_batch, " x accumulation ", accum, " (a rank's ",
                share, " samples per step), the largest whose plan fits in ", static_cast<int>(kPlanShare * 100),
                "% of the least free memory of a rank");
  } else {
    plan = plan_at(s.micro_batch.value, s.recompute == "auto" ? "none" : s.recompute);
    if (s.recompute == "auto" && !fits(plan)) plan = plan_at(s.micro_batch.value, "blocks");
  }
  if (s.recompute == "auto") {
    s.recompute = plan.recompute;
    if (world.rank() == 0) log::info(s.key("recompute"), " = \"auto\": ", s.recompute);
  }
  if (world.rank() != 0) return;
  log::info("memory plan, MB per rank (micro-batch ", plan.micro_batch, ", ", to_string(precision), ", recompute ",
            plan.recompute, plan.activations < 0 ? "; the task gives no activation estimate" : "", "):\n",
            plan.table(free_bytes, devices));
  if (!fits(plan)) {
    log::warn("the plan (", plan.total() >> 20, " MB) is more than ", static_cast<int>(kPlanShare * 100),
              "% of the least free memory of a rank (", least_free >> 20, " MB): this run may run out of memory; ",
              plan.recompute == "none"
                  ? s.key("recompute") + " = \"blocks\" would plan " +
                        std::to_string(plan_at(plan.micro_batch, "blocks").total() >> 20) + " MB; "
                  : std::string(),
              "a smaller ", s.key("micro_batch"), " plans less activation memory, the same global batch through more "
              "accumulation");
  }
}

PlanSettings Trainer::Impl::plan_settings() const {
  PlanSettings settings;
  settings.world_size = world.size();
  settings.half_precision = precision != Precision::FP32;
  settings.ema = s.ema_decay > 0;
  return settings;
}

// The plan of a step in micro-batches of `micro_batch`, a rank's share of the
// global batch taking the accumulation that needs.
MemoryPlan Trainer::Impl::plan_for(PlanSettings settings, int64_t micro_batch, const std::string& recompute) {
  settings.grad_accum = s.micro_batch.value * accum / micro_batch;
  MemoryPlan p = plan_model_memory(*model, settings);
  p.micro_batch = micro_batch;
  p.recompute = recompute;
  p.set_activations(task.activation_bytes({micro_batch, settings.half_precision ? 2 : 4, recompute == "blocks"}));
  return p;
}

// Why micro-batch "auto" found nothing: the smallest plan's figures, and the
// settings that each alone would make it fit.
std::string Trainer::Impl::what_would_fit(const PlanSettings& settings, const MemoryPlan& smallest, double budget) {
  const auto mb = [](double bytes) { return std::to_string(static_cast<int64_t>(bytes) >> 20) + " MB"; };
  std::string text = s.key("micro_batch") + " = \"auto\": the run does not fit even at micro-batch 1 (recompute " +
                     smallest.recompute + "): it plans " + mb(smallest.total()) + " per rank (weights " +
                     mb(smallest.weights) + ", gradients " + mb(smallest.gradients) + ", optimizer " +
                     mb(smallest.optimizer) + ", ema " + mb(smallest.ema) + ", buckets " + mb(smallest.buckets) +
                     ", casts " + mb(smallest.casts) + ", activations " + mb(smallest.activations) + ") against " +
                     mb(budget) + ", " + std::to_string(static_cast<int>(kPlanShare * 100)) +
                     "% of the least free device memory of a rank. ";
  std::vector<std::string> would;
  if (smallest.recompute == "none") {
    const MemoryPlan p = plan_for(settings, 1, "blocks");
    if (p.total() <= budget) would.push_back(s.key("recompute") + " = \"blocks\" (" + mb(p.total()) + ")");
  }
  if (smallest.ema > 0 && smallest.total() - smallest.ema <= budget)
    would.push_back(s.key("ema_decay") + " = 0 (" + mb(smallest.total() - smallest.ema) + ")");
  if (!settings.half_precision) {
    PlanSettings half = settings;
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

// Splits a rank's share of the global batch into micro-batches of
// `micro_batch`: the same samples per step, through more or fewer forward
// passes, and (the objective being a sum over the global batch divided by its
// weight) the same training up to the order of float sums.
void Trainer::Impl::resplit(int64_t micro_batch) {
  SamplerOptions so = sampler->options();
  accum = so.micro_batch * so.grad_accum / micro_batch;
  so.micro_batch = micro_batch;
  so.grad_accum = accum;
  s.micro_batch.value = micro_batch;
  sampler = std::make_unique<Sampler>(so);
  plan = plan_for(plan_settings(), micro_batch, plan.recompute);
}

void Trainer::Impl::restore(const Checkpoint& ckpt) {
  const std::string& path = ckpt.path;
  const int64_t their_batch = ckpt.get_int("global_batch");
  if (their_batch != sampler->global_batch())
    throw UsageError(path + ": trained with a global batch of " + std::to_string(their_batch) + ", this run has " +
                     std::to_string(sampler->global_batch()) + " (" + s.key("micro_batch") +
                     " x grad_accum x ranks); resuming needs the same global "
                     "batch to continue the same sample order");
  const auto their_seed = static_cast<uint64_t>(ckpt.get_int("seed"));
  if (s.seed < 0 && their_seed != seed) {
    // train.seed = -1 drew a seed when the run began. A requeued job draws
    // again, so it continues with the checkpoint's, or it would refuse its own
    // checkpoint. The model built from the new draw is overwritten just below.
    seed = their_seed;
    SamplerOptions so = sampler->options();
    so.seed = seed;
    sampler = std::make_unique<Sampler>(so);
    log::info(s.key("seed"), " = -1: continuing with the seed the run drew, ", seed);
  } else if (their_seed != seed) {
    throw UsageError(path + ": trained with train.seed " + std::to_string(their_seed) + ", this run has " +
                     std::to_string(seed));
  }
  if (has_config(ckpt)) {
    try {
      const auto changed =
          changed_settings(config_from_checkpoint(config.schema(), ckpt), config, {"cmd", s.key("resume")});
      if (!changed.empty()) log::warn(path, " was written with other settings; this run continues with:");
      for (const std::string& line : changed) log::warn("  ", line);
    } catch (const UsageError& e) {
      log::warn("the settings ", path, " was written with cannot be compared with this run's: ", e.what());
    }
  }
  tandem::restore(ckpt, "model", weights);
  optimizer->load_state(ckpt.set("optim"));
  scaler->load_state(ckpt.state);
  start_step = ckpt.get_int("step");
  skipped = ckpt.get_int("skipped_steps");
  best = ckpt.get_double("best_value");
  if (ckpt.state.count("weight_hint")) weight_hint = ckpt.get_double("weight_hint");
  saved_at = start_step;
  restore_oom_micro_batch(ckpt);
  if (ckpt.state.count("early_stop_wait")) {
    stop_best = ckpt.get_double("early_stop_best");
    stop_wait = ckpt.get_int("early_stop_wait");
    stopped_early = ckpt.get_int("stopped_early") != 0;
    // The stop follows from the patience, which is this run's to set, as
    // every other setting a resume changes: with patience left (or none
    // asked for), a run that stopped early trains on.
    if (stopped_early && (s.early_stop_patience == 0 || stop_wait < s.early_stop_patience)) {
      stopped_early = false;
      log::info("the run stopped early at step ", ckpt.get_int("step"), " after ", stop_wait,
                " evaluations without improvement; with ", s.key("early_stop_patience"), " = ",
                s.early_stop_patience, " it trains on");
    }
  }
  if (start_step > total_steps)
    throw UsageError(path + ": already at step " + std::to_string(start_step) + ", past this run's " +
                     std::to_string(total_steps) + " steps");
  log::info("resumed from ", path, " at step ", start_step, " (was ", ckpt.get_int("world_size"), " ranks, now ",
            world.size(), ")");
}

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
  oom_micro_batch = cap;
  if (s.micro_batch.value <= cap) return;
  resplit(split_at_most(s.micro_batch.value * accum, cap));
  log::warn("continuing with micro-batch ", s.micro_batch.value, " x accumulation ", accum,
            ": the run ran out of memory at a larger one with these settings (", ckpt.path, ")");
}

std::string Trainer::Impl::oom_context() const {
  return log::cat(s.key("micro_batch"), " = ", to_toml_literal(config.get(s.key("micro_batch"))), ", ",
                  s.key("recompute"), " = ", to_toml_literal(config.get(s.key("recompute"))), ", ",
                  to_string(precision), " on ", placement.cuda ? gpu.name : std::string("cpu"));
}

// Batch-norm running statistics (the floating buffers) follow each rank's own
// shard: only gradients are averaged. Left so, an evaluation would score each
// rank's shard with its own statistics, a checkpoint and a model file would
// hold rank 0's, and the EMA would copy the local ones. PyTorch's DDP
// broadcasts rank 0's buffers before every forward (broadcast_buffers=True),
// which makes them rank 0's everywhere and costs a collective per step. Here
// the ranks' buffers are averaged where they are read instead: before every
// evaluation, checkpoint and model file. A running statistic is a linear
// recursion over batch statistics (r <- (1 - m) r + m b), so the mean of the
// ranks' values, whenever it is taken, is the running statistic of the
// ranks' mean batch statistics: every rank's data counts, nothing is paid
// per step, and training, which normalises with batch statistics, is
// untouched. The EMA's copies of the buffers are averaged alike, and a step's
// buffers once: the evaluation, checkpoint and model file of the last step
// read the same ones.
void Trainer::Impl::average_buffers(int64_t steps_done) {
  if (world.size() == 1 || buffers_averaged_at == steps_done) return;
  buffers_averaged_at = steps_done;
  std::set<std::string> buffer_names;
  std::vector<at::Tensor> floating;
  for (const auto& b : model->named_buffers()) {
    buffer_names.insert(b.key());
    if (b.value().is_floating_point()) floating.push_back(b.value());
  }
  if (ema)
    for (const auto& [name, t] : ema->named_tensors())
      if (buffer_names.count(name) && t.is_floating_point()) floating.push_back(t);
  torch::NoGradGuard no_grad;
  std::vector<WorkHandle> works;
  for (const auto& t : floating) works.push_back(comm->allreduce_async(t, ReduceOp::Avg));
  for (auto& w : works) w->wait();
}

void Trainer::Impl::save(int64_t steps_done) {
  average_buffers(steps_done);
  if (world.rank() == 0) {
    CheckpointState state = scaler->state();
    state["step"] = steps_done;
    state["epoch"] = steps_done / sampler->steps_per_epoch();
    state["global_batch"] = sampler->global_batch();
    state["world_size"] = int64_t{world.size()};
    state["seed"] = static_cast<int64_t>(seed);
    state["skipped_steps"] = skipped;
    state["best_value"] = best;
    state["weight_hint"] = weight_hint;
    state["oom_micro_batch"] = oom_micro_batch;
    state["oom_context"] = oom_context();
    state["early_stop_best"] = stop_best;
    state["early_stop_wait"] = stop_wait;
    state["stopped_early"] = int64_t{stopped_early};
    state["config"] = config.to_toml();
    TensorSets sets = {{"model", weights}, {"optim", optimizer->state()}};
    if (ema) sets["ema"] = ema->named_tensors();
    const auto path = checkpoints->save(steps_done, sets, state);
    log::info("checkpoint ", path);
  }
  saved_at = steps_done;
  // Nobody leaves before rank 0 has written: a rank that exits early makes
  // the launcher kill the others, rank 0 mid-write included.
  world.barrier();
}

// Called with the judged weights in the model: a model file's "model" set is
// what was evaluated (the EMA, with one), so every reader of model files
// (predict, test reports, sampling, model.load) gets it without knowing of EMAs.
void Trainer::Impl::save_model(const std::string& name, int64_t steps_done) {
  if (world.rank() != 0) return;
  CheckpointState state;
  state["step"] = steps_done;
  state["config"] = config.to_toml();
  fs::create_directories(out_dir / "models");
  TensorSets sets = {{"model", weights}};
  save_checkpoint((out_dir / "models" / (name + ".h5")).string(), sets, state);
}

// With an EMA the average is judged and picks the best model, as timm does:
// it is the smoother of the two on small, noisy validation sets, and the one
// that is sampled from.
bool Trainer::Impl::evaluate_and_track(int64_t steps_done) {
  average_buffers(steps_done);
  JudgedWeights judged(*this, steps_done);
  EvalContext ctx;
  ctx.world = &world;
  ctx.device = device;
  ctx.precision = precision;
  ctx.micro_batch = s.micro_batch.value;
  ctx.seed = seed;
  last_eval = evaluate(task, *model, ctx);
  if (last_eval.empty()) return false;
  std::string line;
  MetricsWriter::Row row = {{"step", steps_done}};
  for (const auto& [k, v] : last_eval) {
    line += " " + k + " " + std::to_string(v);
    row.emplace_back(k, v);
  }
  log::info("eval at step ", steps_done, ":", line);
  if (metrics) metrics->write(row);
  if (tensorboard) tensorboard->row(row);
  std::vector<std::string> given;
  for (const auto& [k, v] : last_eval) given.push_back(k);
  if (!std::is_permutation(given.begin(), given.end(), metric_names.begin(), metric_names.end()))
    throw std::logic_error("the task's metric_names() do not name the metrics its eval_metrics gives");
  if (s.best_metric == kNoBestMetric) return false;
  auto it = last_eval.find(s.best_metric);
  const bool better = std::isnan(best) || beats(it->second, best, 0.0);
  if (better) {
    best = it->second;
    save_model("best_model", steps_done);
    log::info("new best ", s.best_metric, " ", best, ": models/best_model.h5");
  }
  return better;
}

// Early stopping as Lightning's EarlyStopping: an evaluation improves only
// by beating the best so far by more than min_delta, in the metric's
// direction; `patience` evaluations in a row without that end the run.
// Every rank holds the same reduced evaluation, so decides alike; World::any
// makes sure of it, so that no rank is left waiting in the next step's
// collectives.
bool Trainer::Impl::early_stop(int64_t steps_done) {
  if (s.early_stop_patience == 0 || last_eval.empty()) return false;
  const double value = last_eval.at(s.best_metric), delta = s.early_stop_min_delta;
  const bool improved = std::isnan(stop_best) ? !std::isnan(value) : beats(value, stop_best, delta);
  if (improved) {
    stop_best = value;
    stop_wait = 0;
  } else {
    ++stop_wait;
  }
  stopped_early = world.any(stop_wait >= s.early_stop_patience);
  if (!stopped_early || world.rank() != 0) return stopped_early;
  log::info("stopping early at step ", steps_done, " of ", total_steps, ": ", s.best_metric, " has not improved on ",
            stop_best, " by more than ", delta, " for ", stop_wait, " evaluations (", s.key("early_stop_patience"),
            ")");
  const MetricsWriter::Row row = {{"step", steps_done},
                                  {"stopped", "early_stop"},
                                  {"early_stop_best", stop_best},
                                  {"early_stop_wait", stop_wait}};
  if (metrics) metrics->write(row);
  return true;
}

// The first micro-batches of this rank's share of the epoch just trained,
// augmented as in training: the data the live statistics came from.
void Trainer::Impl::recompute_ema_bn_stats(int64_t steps_done) {
  const int64_t spe = sampler->steps_per_epoch();
  const int64_t epoch = std::max<int64_t>(steps_done - 1, 0) / spe;
  const int64_t batches = std::min(s.ema_bn_batches, spe * accum);
  auto forward = [&](int64_t i) {
    const auto mb = sampler->micro_batch(epoch, i / accum, static_cast<int>(i % accum));
    auto batch = to_device(make_loop_batch(task, mb.indices, mb.valid, true, epoch_seed(seed, epoch)), device);
    AutocastGuard autocast(precision, placement.cuda);
    (void)task.loss(*model, batch);
  };
  recompute_batch_norm_stats(*model, batches, forward, comm.get());
}

// The step's micro-batches for this rank, made ahead by a thread.
std::unique_ptr<Loader> Trainer::Impl::make_loader(int64_t first_step) {
  const int64_t spe = sampler->steps_per_epoch();
  auto make = [this, spe](int64_t i) {
    const int64_t step = i / accum;
    const int a = static_cast<int>(i % accum);
    const auto mb = sampler->micro_batch(step / spe, step % spe, a);
    return make_loop_batch(task, mb.indices, mb.valid, true, epoch_seed(seed, step / spe));
  };
  return std::make_unique<Loader>(pinned_for(make, device), first_step * accum, total_steps * accum,
                                  static_cast<int>(2 * accum));
}

void Trainer::Impl::start_reporting() {
  if (world.rank() == 0) {
    metrics = std::make_unique<MetricsWriter>((out_dir / "metrics.jsonl").string());
    if (s.tensorboard) tensorboard = std::make_unique<TensorBoardWriter>((out_dir / "tb").string());
    reported_step = start_step;
    const int64_t least_free = *std::min_element(free_bytes.begin(), free_bytes.end());
    MetricsWriter::Row row = plan.row(least_free);
    row.insert(row.begin(), {"step", start_step});
    metrics->write(row);
    if (tensorboard) tensorboard->row(row);
    progress = std::make_unique<Progress>("train", total_steps, std::cerr, console_redraws(), 10.0);
  }
}

// The step's micro-batches forward and backward, gradients accumulating (and
// synchronising between ranks during the last backward). A rank that runs
// out of memory stops there and says so (f.out_of_memory), after taking its
// part in the collectives the others are in or will reach, so that none
// waits for it; reduce() then tells every rank.
Trainer::Impl::StepFigures Trainer::Impl::forward_backward(DeviceFeed& feed) {
  StepFigures f;
  f.hint_before = weight_hint;
  f.loss_sum = torch::zeros({}, torch::TensorOptions().dtype(torch::kDouble).device(device));
  f.weight_sum = torch::zeros_like(f.loss_sum);
  for (int64_t a = 0; a < accum; ++a) {
    try {
      micro_step(feed, f, a == accum - 1);
    } catch (const c10::Error& e) {
      if (!is_out_of_memory(e)) throw;
      log::warn("out of memory in micro-batch ", a + 1, " of ", accum, " (", s.micro_batch.value,
                " samples): ", e.what_without_backtrace());
      f.out_of_memory = 1;
      settle_collectives();
      return f;
    }
  }
  if (sync) sync->finish();
  return f;
}

// One micro-batch forward and backward; the last one's backward synchronises.
void Trainer::Impl::micro_step(DeviceFeed& feed, StepFigures& f, bool last) {
  auto [host_batch, batch] = feed.next();
  // Counted on the host copy: on a GPU the count would wait for the device.
  f.tokens += task.tokens_in(host_batch);
  f.flops += task.flops_in(host_batch);
  Loss loss;
  {
    AutocastGuard autocast(precision, placement.cuda);
    nn::RecomputeScope recompute(s.recompute == "blocks");
    loss = task.loss(*model, batch);
  }
  if (weight_hint == 0) weight_hint = first_weight_hint(loss.weight);
  // Only now: a loss may differentiate on its own (autograd::grad for an
  // adaptive weight, as vavae's VF loss does), and the gradient sync must
  // not take those gradients for this backward's.
  if (sync) sync->prepare(last);
  f.loss_sum += loss.sum.detach().to(torch::kDouble);
  f.weight_sum += loss.weight.detach().to(torch::kDouble);
  (loss.sum * (scaler->scale() / weight_hint)).backward();
}

// After running out of memory, the collectives of the step this rank has not
// yet taken part in, in the order the others take them: the first step's
// weight hint, then the gradient buckets not yet launched (GradSync::abandon).
// What they carry does not matter: every rank drops the step.
void Trainer::Impl::settle_collectives() {
  if (weight_hint == 0) weight_hint = first_weight_hint(torch::zeros({}, torch::TensorOptions().device(device)));
  if (sync) sync->abandon();
}

// The first micro-batch's loss weight averaged over the ranks, times the
// accumulation: a rank's share of a global batch's weight, as near as the
// first step can know it, rounded to a power of two (a first micro-batch of
// padding only counts its samples instead). Once per run, so one collective
// (and one wait for the device).
double Trainer::Impl::first_weight_hint(const at::Tensor& weight) {
  auto w = weight.detach().to(torch::kDouble).reshape({1}).clone();
  if (world.size() > 1) comm->allreduce(w, ReduceOp::Avg);
  double share = w.item<double>() * static_cast<double>(accum);
  if (!(share > 0) || !std::isfinite(share)) share = static_cast<double>(s.micro_batch.value * accum);
  return std::exp2(std::round(std::log2(share)));
}

// The step's one device-to-host copy: the loss sum and weight, token and FLOP
// counts (summed over the ranks) and the gradient norm, which the update
// needs. Gradients are identical on every rank after the sync, so is the
// norm, and with it every rank's decision to step or skip.
void Trainer::Impl::reduce(StepFigures& f, const std::vector<at::Tensor>& grads) {
  const auto options = f.loss_sum.options();
  auto reduced = torch::stack({f.loss_sum, f.weight_sum, torch::full({}, f.tokens, options),
                               torch::full({}, f.flops, options), torch::full({}, f.out_of_memory, options),
                               grad_norm_of(grads, options)});
  if (world.size() > 1) {
    auto summed = reduced.narrow(0, 0, 5);  // the norm is the same everywhere
    comm->allreduce(summed, ReduceOp::Sum);
  }
  auto host = reduced.cpu();
  f.weight = host[1].item<double>();
  f.tokens = host[2].item<double>();
  f.flops = host[3].item<double>();
  f.out_of_memory = host[4].item<double>();
  // GradSync averages over the ranks: the gradients hold
  // sum_r grad(loss_sum_r) * scale / (hint * world), the step wants
  // sum_r grad(loss_sum_r) / weight. A global batch of no weight (padding
  // only) teaches nothing.
  const bool weighed = f.weight > 0;
  f.loss = weighed ? host[0].item<double>() / f.weight : 0.0;
  f.grad_factor = weighed ? world.size() * weight_hint / (scaler->scale() * f.weight) : 0.0;
  f.grad_norm = host[5].item<double>() * f.grad_factor;
}

// Clips, then steps the optimizer, or skips a step whose gradients are not
// finite; too many skips in a row that no loss scale can cure end the run
// (BadSteps).
void Trainer::Impl::update(int64_t step, const StepFigures& f, const std::vector<at::Tensor>& grads, double lr) {
  const bool finite = std::isfinite(f.grad_norm);
  // torch.nn.utils.clip_grad_norm_'s rule, with the norm already known; one
  // pass over the gradients for it and the step's factor together.
  const double clip = s.grad_clip > 0 ? s.grad_clip / (f.grad_norm + 1e-6) : 1.0;
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
    if (ema) ema->update(*model, s.ema_decay);
  }
  optimizer->zero_grad();
  if (!apply) ++skipped;
  bad_steps->after_step(step, apply, f.loss, *scaler, checkpoints->dir());
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
  const int64_t was = s.micro_batch.value, share = was * accum;
  const int64_t smaller = split_at_most(share, was / 2);
  const std::string what = log::cat("step ", step + 1, " ran out of memory on ", failed_ranks, " rank(s) at ",
                                    s.key("micro_batch"), " ", was, " x accumulation ", accum);
  if (smaller < 1) {
    if (saved_at != step) save(step);
    throw std::runtime_error(log::cat(
        what, ", and there is no smaller micro-batch; the checkpoint of step ", step, " keeps the run. The plan was ",
        plan.total() >> 20, " MB at micro-batch ", plan.micro_batch, " (recompute ", s.recompute, ") against ",
        *std::min_element(free_bytes.begin(), free_bytes.end()) >> 20, " MB free: set ", s.key("recompute"),
        " = \"blocks\", lower the precision or use a device with more memory"));
  }
  resplit(smaller);
  oom_micro_batch = smaller;
  if (world.rank() == 0)
    log::warn(what, ": the step is dropped and run again with micro-batch ", smaller, " x accumulation ", accum,
              ", kept for the rest of the run");
}

// Rank 0's row in metrics.jsonl, the progress line and, every log_every
// steps, a line in the log file.
void Trainer::Impl::report(int64_t done, const StepFigures& f, double lr, double ms) {
  if (!metrics) return;
  MetricsWriter::Row row = {{"step", done},
                            {"epoch", done / sampler->steps_per_epoch()},
                            {"loss", f.loss},
                            {"loss_weight", f.weight},
                            {"lr", lr},
                            {"grad_norm", f.grad_norm},
                            {"loss_scale", scaler->scale()},
                            {"skipped", skipped},
                            {"ms", ms},
                            {"samples_per_s", sampler->global_batch() * 1000.0 / ms}};
  if (const int64_t peak = tensor_memory(device).peak; peak >= 0)
    row.emplace_back("peak_mem_mb", static_cast<double>(peak) / (1024.0 * 1024.0));
  if (f.tokens > 0) row.emplace_back("tokens_per_s", f.tokens * 1000.0 / ms);
  // After reduce()'s copy to the host, so on a GPU the events asked are done.
  if (sync) row.emplace_back("sync_wait_ms", sync->last_wait_ms());
  if (f.flops > 0) {
    const double per_gpu = f.flops * 1000.0 / ms / world.size();
    row.emplace_back("flops_per_s", per_gpu * world.size());
    // On CPU or an unknown GPU there is no peak to compare with: no field.
    if (auto m = mfu(per_gpu, gpu.name, mfu_precision, gpu.sm_count)) row.emplace_back("mfu", *m);
  }
  metrics->write(row);
  if (tensorboard) tensorboard->row(row);
  if (done == start_step + 1) {
    const TensorMemory m = tensor_memory(device);
    if (m.peak >= 0)
      log::info("memory: the first step's peak is ", (m.peak - live_before_model) / (1024 * 1024),
                " MB of tensors on rank 0's device over what it held before the model; the plan said ",
                plan.total() / (1024 * 1024), " MB");
  }
  reported_step = done;
  char extra[128];
  std::snprintf(extra, sizeof extra, "loss %.4f lr %.3g %.0f ms/step", f.loss, lr, ms);
  progress->update(done, extra);
  if (done % s.log_every == 0 || done == total_steps)
    log::write(log::Level::Debug, "step " + std::to_string(done) + " " + extra);
}

int Trainer::Impl::loop() {
  auto loader = make_loader(start_step);
  auto feed = std::make_unique<DeviceFeed>(*loader, device);
  start_reporting();
  // The first step's peak, not the restore's or the broadcast's.
  reset_tensor_peak(device);
  // One monitor per node: NVML sees every GPU of the node anyway.
  std::unique_ptr<GpuMonitor> monitor;
  if (world.local_rank() == 0 && placement.cuda)
    monitor = std::make_unique<GpuMonitor>(s.gpu_every_s, [this](const std::vector<GpuSample>& gpus) {
      for (const auto& g : gpus) log::info(format(g));
      if (tensorboard) tensorboard->gpus(reported_step, gpus);
    });

  int64_t finished = total_steps;  // or the step early stopping ended the run at
  for (int64_t step = start_step; step < finished; ++step) {
    if (world.any(preemption_requested())) {
      log::warn("signal ", preemption_signal(), " received: checkpointing at step ", step, " and exiting with status ",
                int(kExitRequeue), " so the job can be requeued");
      save(step);
      return kExitRequeue;
    }
    // Dropout and other in-model randomness: a function of (seed, rank, step),
    // so a resumed run draws exactly what an uninterrupted one would.
    torch::manual_seed(rank_seed(seed, world.rank()) + static_cast<uint64_t>(step));
    const auto t0 = std::chrono::steady_clock::now();
    const double lr = schedule.at(step);
    StepFigures figures = forward_backward(*feed);
    std::vector<at::Tensor> grads;
    for (auto& [name, p] : params)
      if (p.grad().defined()) grads.push_back(p.grad());
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
    const int64_t done = step + 1;
    report(done, figures, lr, std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());

    const bool epoch_end = done % sampler->steps_per_epoch() == 0;
    const bool evaluates =
        (s.eval_every > 0 && done % s.eval_every == 0) || (s.eval_every == 0 && epoch_end) || done == total_steps;
    if (evaluates) evaluate_and_track(done);
    const bool stops = evaluates && early_stop(done);
    if ((s.ckpt_every > 0 && done % s.ckpt_every == 0) || done == total_steps || stops) save(done);
    if (stops) finished = done;
  }
  if (progress) progress->finish();
  save_final_model(finished);
  if (world.rank() == 0) log::info("done: ", finished, " steps; models in ", (out_dir / "models").string());
  return kExitOk;
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

Trainer::Trainer(World& world, const Config& config, Task& task, TrainSettings settings)
    : impl_(std::make_unique<Impl>(world, config, task, std::move(settings))) {
  impl_->check_settings();
}

Trainer::~Trainer() = default;

// The error is printed here, before the Impl (its communicator, loader and
// gradient sync) is torn down by the unwinding: see report_error.
int Trainer::run() {
  try {
    return impl_->run();
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
    if (!im.resume_from) im.config.write((im.out_dir / "config.toml").string());
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
            " backend, ", to_string(im.precision), "; micro batch ", im.s.micro_batch.value, " x accumulation ", im.accum,
            " x world ", im.world.size(), " = global batch ", im.sampler->global_batch(), "; ", im.total_steps,
            " steps (", im.sampler->steps_per_epoch(), " per epoch)");
  if (im.start_step == im.total_steps || im.stopped_early) {
    // The last checkpoint comes before the final model: a run that died
    // between the two (killed, out of disk) is finished here. Rank 0 writes
    // models, so its answer is everyone's.
    const std::string why = im.stopped_early ? "the run stopped early there" : "it is the last step";
    const fs::path final_model = im.out_dir / "models" / "final_model.h5";
    if (im.world.any(im.world.rank() == 0 && !fs::is_regular_file(final_model))) {
      log::info("the checkpoint is at step ", im.start_step, " and ", why, ": writing the final model it lacks");
      im.save_final_model(im.start_step);
    } else {
      log::info("nothing to do: the checkpoint is at step ", im.start_step, " and ", why);
    }
    return kExitOk;
  }
  return im.loop();
}

torch::nn::Module& Trainer::model() { return *impl_->model; }
void Trainer::on_gradients(GradientHook hook) { impl_->gradient_hook = std::move(hook); }
const Metrics& Trainer::last_eval() const { return impl_->last_eval; }
int64_t Trainer::micro_batch() const { return impl_->s.micro_batch.value; }

}  // namespace tandem
