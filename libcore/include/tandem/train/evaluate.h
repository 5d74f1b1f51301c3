#pragma once
// Evaluation on every rank at once: each rank takes an equal shard (padded
// with marked duplicates, so all ranks run the same number of batches and
// reach the next collective together); per-sample rows are gathered, put back
// in dataset order, stripped of padding, and every rank computes the same
// metrics from them, so decisions such as "is this the best model" agree.
#include <cstdint>

#include "tandem/train/precision.h"
#include "tandem/train/task.h"

namespace tandem {

class World;

struct EvalContext {
  World* world = nullptr;
  c10::Device device = c10::Device(c10::kCPU);
  Precision precision = Precision::FP32;
  // Some of the model's weights are in the compute precision (a frozen base,
  // Task::frozen_base; train.master_weights = "sharded"): only autocast at
  // `precision` takes them, on the CPU too, where inference is otherwise fp32.
  bool weights_in_precision = false;
  int64_t micro_batch = 1;
  uint64_t seed = 0;
  // Where set, the micro-batch evaluation settled on after running out of
  // memory (gather_eval_rows), for the caller's next evaluation.
  int64_t* backed_off_to = nullptr;
};

// Every evaluation sample's rows (Task::eval_rows), from all ranks, in
// dataset order, padding dropped, on the host: what reports per sample are
// made from. Empty when the task has no evaluation set. A rank that runs
// out of device memory stops its batches; every rank learns it (World::any,
// after its own batches) and all evaluate again at half the micro-batch,
// down to 1, as training backs off (logged; the rows are the same). Every
// rank must call it together.
EvalRows gather_eval_rows(Task& task, torch::nn::Module& model, const EvalContext& ctx);

// What evaluate puts before each of the task's metric names.
inline constexpr const char* kEvalPrefix = "eval_";

// The task's metrics over those rows, each prefixed kEvalPrefix. Empty when
// the task has no evaluation set.
Metrics evaluate(Task& task, torch::nn::Module& model, const EvalContext& ctx);

}  // namespace tandem
