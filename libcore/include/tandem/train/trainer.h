#pragma once
// The training loop every app runs. An app gives a Task; the Trainer does the
// rest the same way for all of them: the device and backend for each rank,
// the global batch (micro batch x accumulation x world size), gradient sync
// during backward, precision and loss scaling, AdamW with clipping and a
// schedule, evaluation on all ranks, checkpoints, exact resume (also on a
// different number of ranks), preemption by signal, per-step metrics, a
// memory plan before the first step (train.micro_batch = "auto" picks from
// it) and, on running out of memory, the step again at half the micro-batch.
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "tandem/named_tensors.h"
#include "tandem/train/task.h"
#include "tandem/train/train_keys.h"

namespace tandem {

class World;
class Config;

// The model a run in `out_dir` left: models/best_model.h5 (the best
// evaluation), else models/final_model.h5; "" when it has neither yet.
std::string trained_model(const std::string& out_dir);

class Trainer {
 public:
  // `config` must hold the dist.* keys (add_dist_keys); it is saved with
  // every checkpoint. `settings` come from train_settings(config), which an
  // app may adjust (apps/vavae gives each stage its own out_dir). Every check
  // of the settings and of the run directory happens here, before any work,
  // and throws UsageError.
  Trainer(World& world, const Config& config, Task& task, TrainKeys settings);
  ~Trainer();

  // Trains to the last step and returns kExitOk, or stops at a step boundary
  // after a checkpoint when any rank got SIGUSR1/SIGTERM and returns
  // kExitRequeue. Throws when training cannot go on (non-finite steps).
  int run();

  torch::nn::Module& model();
  const Metrics& last_eval() const;
  // The micro-batch training ended with: train.micro_batch, or what "auto"
  // picked, or what running out of memory left. For evaluating afterwards.
  int64_t micro_batch() const;

  // Called on every rank at every step with the trainable parameters, whose
  // grad() then holds the gradient of the step's objective as the optimizer
  // takes it (synchronised, divided by the global batch's loss weight,
  // clipped), before the step. For tests and tools that watch training;
  // refused (std::logic_error) under dist.shard = "gradients" on more than
  // one rank, where each rank holds only its block of the gradients.
  using GradientHook = std::function<void(int64_t step, const NamedTensors& params)>;
  void on_gradients(GradientHook hook);

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace tandem
