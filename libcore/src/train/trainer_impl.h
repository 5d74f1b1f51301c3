#pragma once
// Trainer::Impl: what the Trainer's files share: trainer.cpp (the checks,
// the set-up, the loop and its steps), trainer_memory.cpp (the memory plan,
// micro_batch = "auto", the out-of-memory back-off), trainer_checkpoint.cpp
// (what a run writes and reads back) and trainer_evaluation.cpp
// (evaluation, the best model, early stopping). The state with rules of its
// own lives in parts that own it: the batch split (batch_split.h), the run
// record (run_record.h) and the report (train_report.h); the settings are
// the user's, never changed. Private to libcore/src/train.
#include "tandem/train/trainer.h"
#include <torch/torch.h>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <stdexcept>
#include "tandem/config/checkpoint_config.h"
#include "tandem/config/config.h"
#include "tandem/dist/communicator.h"
#include "tandem/dist/cuda_info.h"
#include "tandem/dist/dist_keys.h"
#include "tandem/dist/gpu_math.h"
#include "tandem/dist/grad_sync.h"
#include "tandem/dist/layout.h"
#include "tandem/dist/placement.h"
#include "tandem/dist/seed.h"
#include "tandem/dist/shard.h"
#include "tandem/dist/world.h"
#include "tandem/error.h"
#include "tandem/nn/recompute.h"
#include "tandem/obs/log.h"
#include "tandem/obs/mfu.h"
#include "tandem/obs/tensor_memory.h"
#include "tandem/program.h"
#include "tandem/random.h"
#include "tandem/text/message_text.h"
#include "tandem/train/adamw.h"
#include "tandem/train/autocast_guard.h"
#include "tandem/train/bad_steps.h"
#include "tandem/train/batch_split.h"
#include "tandem/train/batch_norm_stats.h"
#include "tandem/train/ema.h"
#include "tandem/train/grad_norm.h"
#include "tandem/train/evaluate.h"
#include "tandem/train/loss_scaler.h"
#include "tandem/train/memory_fit.h"
#include "tandem/train/memory_plan.h"
#include "tandem/train/preemption.h"
#include "tandem/train/run_record.h"
#include "tandem/train/schedule.h"
#include "tandem/train/train_keys.h"
#include "tandem/train/train_report.h"

namespace tandem {

namespace fs = std::filesystem;

// The seed the task gets for an epoch's augmentation: a function of the run's
// seed and the epoch only, hence the same on any world size.
inline uint64_t epoch_seed(uint64_t seed, int64_t epoch) { return mix_seed(seed, static_cast<uint64_t>(epoch)); }

struct Trainer::Impl {
  World& world;
  const Config& config;
  Task& task;
  const TrainKeys settings;

  // Where and how this rank computes, from the settings (set_up).
  DistKeys dist;
  Placement placement;
  std::unique_ptr<Communicator> comm;
  Precision precision = Precision::FP32;
  c10::Device device = c10::Device(c10::kCPU);
  GpuInfo gpu;  // the rank's GPU, for precision and MFU; no name on the CPU
  std::string mfu_precision;  // the peak MFU compares with: tf32 for fp32 with TF32 on
  uint64_t seed = 0;  // train.seed, or the one drawn for -1
  fs::path out_dir;

  // The parts that own the run's state, each with its contract in its header.
  std::optional<BatchSplit> batches;   // micro-batch, accumulation, sampler, out-of-memory cap
  std::optional<RunRecord> record;     // checkpoints, resume, best model, early stopping
  std::unique_ptr<TrainReport> report; // metrics.jsonl, TensorBoard, progress; from the loop's start
  Schedule schedule;
  int64_t total_steps = 0;

  // The model and its optimizer step.
  std::shared_ptr<torch::nn::Module> model;
  NamedTensors params;   // trainable, in registration order
  NamedTensors weights;  // what a checkpoint holds: every parameter, or the trained state alone
  std::string frozen_base;              // Task::frozen_base
  // dist.shard other than "none" on more than one rank, or on any number
  // under train.master_weights = "sharded".
  std::unique_ptr<ParamShards> shards;
  // The shards' fp32 gradient blocks stand in for the parameters' .grad at
  // the step: dist.shard = "gradients", or sharded masters (which read them).
  bool grads_sharded() const { return shards && shards->holds_gradients(); }
  // dist.shard = "gradients" on more than one rank: GradSync reduce-scatters
  // every micro-step into the blocks. Otherwise, with blocks, the whole
  // gradients are added into them (take_gradients): after the sync under
  // "optimizer", after each micro-step on one rank.
  bool sync_sharded() const { return grads_sharded() && dist.shard == "gradients" && world.size() > 1; }
  bool masters_sharded() const { return settings.master_weights == "sharded"; }
  std::unique_ptr<AdamW> optimizer;
  std::unique_ptr<LossScaler> scaler;
  std::unique_ptr<GradSync> sync;
  std::unique_ptr<Ema> ema;  // only with train.ema_decay > 0
  bool judging = false;      // while JudgedWeights lives: files take the masters' average
  std::unique_ptr<BadSteps> bad_steps;
  // A power of two near a rank's share of a global batch's loss weight, the
  // same on every rank: backward runs on loss sums divided by it, so
  // gradients have the magnitude a per-rank mean gave them (fp16's range)
  // before the step knows its weight, and dividing by a power of two changes
  // no bit. 0 until the first step sets it; kept in checkpoints, so that a
  // resumed fp16 run rounds as an uninterrupted one.
  double weight_hint = 0;
  int64_t skipped = 0;
  Trainer::GradientHook gradient_hook;

  // The memory plan, each rank's free device memory when it was made, and
  // the device's tensor bytes then, which the measured peak is compared from.
  // plan.recompute is what train.recompute resolved to.
  MemoryPlan plan;
  std::vector<int64_t> free_bytes;
  int64_t live_before_model = 0;
  // The device's peak before the first evaluation, which lowers it to
  // measure itself: step rows report the run's peak still.
  int64_t peak_before_evaluation = -1;
  bool evaluated = false;  // this process ran an evaluation

  std::string best_direction;  // train.best_mode, "auto" resolved: "min" or "max"
  Metrics last_eval;
  // The micro-batch evaluation backed off to after running out of memory,
  // kept for the rest of the run (not in checkpoints); 0: training's.
  int64_t eval_micro_batch = 0;
  std::vector<std::string> metric_names;  // the task's, prefixed as evaluate gives them
  int64_t buffers_averaged_at = -1;  // the step whose buffers were last averaged

  Impl(World& w, const Config& c, Task& t, TrainKeys s)
      : world(w), config(c), task(t), settings(std::move(s)) {}

  void check_settings();
  void check_best_metric();
  void set_up();
  void plan_memory(const std::vector<std::string>& devices);
  // The plan's rule (memory_fit.h) over the model as it is and the present cut.
  MemoryFit memory_fit();
  // The plan again after the batch split changed.
  void replan();
  std::string oom_context() const;
  void back_off(int64_t step, int64_t failed_ranks, double hint_before);
  std::vector<std::string> gather_free_memory();
  void build();
  void keep_frozen_in_compute_precision();
  void check_frozen_base_agrees();
  void make_optimizer();
  void make_ema(const Checkpoint* resume);
  void leave_in_fp32();
  void restore(const Checkpoint& ckpt);
  void restore_oom_micro_batch(const Checkpoint& ckpt);
  void save(int64_t steps_done);
  // The weights a checkpoint or model file holds: `weights`, with the fp32
  // masters (their average while judging) in place of half-precision
  // working weights; and the "ema" set. Collectives (the masters are
  // gathered to rank 0, which alone writes: elsewhere the half-precision
  // entries stay).
  NamedTensors weights_to_write() const;
  NamedTensors ema_to_write() const;
  // `set` with trainable parameter i's entry replaced by `whole[i]` where defined.
  NamedTensors with_masters(NamedTensors set, const std::vector<at::Tensor>& whole) const;
  // Throws JobEnding, naming `what`, when the watchdog fired while the device
  // computed what is about to be committed (a file): it waits for the device
  // first, since an aborted collective ends with a partial result.
  void require_whole(const std::string& what) const;
  void record_precision(CheckpointState& state) const;
  void save_model(const std::string& name, int64_t steps_done);
  void save_final_model(int64_t steps_done);
  bool evaluate_and_track(int64_t steps_done);
  bool early_stop(int64_t steps_done);

  void recompute_ema_bn_stats(int64_t steps_done);
  void average_buffers(int64_t steps_done);

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
        if (im_.optimizer->has_average()) im_.optimizer->write_masters(true);
        im_.judging = true;
      }
      if (im_.settings.ema_bn_batches > 0) im_.recompute_ema_bn_stats(steps_done);
    }
    ~JudgedWeights() {
      torch::NoGradGuard no_grad;
      for (size_t i = 0; i < live_.size(); ++i) im_.weights[i].second.copy_(live_[i]);
      im_.judging = false;
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
    // tokens: real ones (Task::tokens_in); computed: padding included.
    double loss = 0, weight = 0, tokens = 0, computed = 0, flops = 0, grad_norm = 0;
    // What turns the synchronised gradients into those of the step's
    // objective: undoes the loss scale and the hint, divides by the weight.
    double grad_factor = 0;
    // Ranks that ran out of memory in the step (this rank's alone until
    // reduce()), and the weight hint before it, which a dropped step undoes.
    double out_of_memory = 0, hint_before = 0;
    int64_t micro_steps = 0;  // this step's forward passes (BatchSplit::micro_steps)
    // The run's first step: the task's activation estimate for the shapes
    // its micro-batches had (the largest start and end), which the measured
    // peak is checked against (check_plan).
    bool watch_memory = false;
    Activations seen;
  };
  std::unique_ptr<Loader> make_loader(int64_t first_step);
  void start_reporting();
  StepFigures forward_backward(DeviceFeed& feed, int64_t step);
  void micro_step(DeviceFeed& feed, StepFigures& f, bool last);
  void settle_collectives(int64_t micro_steps_left, int64_t micro_steps);
  double first_weight_hint(const at::Tensor& weight, int64_t micro_steps);
  void reduce(StepFigures& f, const std::vector<at::Tensor>& grads);
  void update(int64_t step, const StepFigures& f, const std::vector<at::Tensor>& grads, double lr);
  // After the first step: its measured peak against the plan, and against
  // the plan for the shapes the step really had; a warning naming the terms
  // when the latter is off by more than 15%.
  void check_plan(const StepFigures& f);
  // After the first evaluation: the device's tensors as it began and its
  // peak, measured, against the plan's terms between steps and its
  // evaluation total; a warning naming the terms when the peak is over the
  // plan by more than 15%.
  void check_evaluation_plan(int64_t live_before, int64_t peak);
  void report_step(int64_t done, const StepFigures& f, double lr, double ms);
  int loop();
  int run();
};

}  // namespace tandem
