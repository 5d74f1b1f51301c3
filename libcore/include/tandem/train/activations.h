#pragma once
// What a task says of its activations to the memory plan (memory_plan.h):
// asked for a micro-batch, it answers the bytes backward holds besides the
// weights' figures at its start and at its end. Each model states its own
// beside its code (GPTConfig, ResNetOptions, DitOptions ::activation_bytes).
#include <cstdint>
#include <string>

#include "tandem/data/loader.h"

namespace tandem {

// What a training micro-batch's activations depend on besides the model and
// its inputs' shapes.
struct ActivationQuery {
  int64_t micro_batch = 1;
  int64_t element_bytes = 4;  // of the forward's compute dtype: 2 under fp16 or bf16 autocast, else 4
  bool recompute = false;     // train.recompute = "blocks"
  bool cpu = false;           // the ranks compute on the CPU
  // When set, the shapes of this batch (its host tensors, as make_batch or
  // make_packed_batch gave them) rather than the largest the task makes:
  // the trainer's check of its plan against a step's measured peak. Tasks
  // whose batches are all alike may ignore it.
  const Batch* batch = nullptr;
};

// A task's answer, in bytes: `start`, as backward starts (what the forward
// kept, the loss's transients, the gradients made first); `end`, beside
// every gradient as backward reaches the first layers (memory_plan.h).
// `evaluation`: evaluating micro-batches of that size without gradients,
// the most the forward holds at once, or whatever else the task's
// evaluation runs if that holds more (summarize's greedy generation for
// eval.rouge_samples and its KV cache); `evaluation_by` says in words what
// sizes it, with the keys that do, for the plan's advice.
struct Activations {
  int64_t start = -1;  // -1: the task cannot say
  int64_t end = 0;
  int64_t evaluation = -1;  // -1: the task cannot say
  std::string evaluation_by;
};

}  // namespace tandem
