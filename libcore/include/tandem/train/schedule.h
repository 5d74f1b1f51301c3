#pragma once
// The learning rate as a function of the step (train.schedule). Every kind
// warms up linearly over train.warmup_steps, then "constant" holds train.lr,
// "cosine" follows half a cosine from train.lr down to train.min_lr at the last
// step, and "linear" falls in a straight line to it. Warmup and cosine are
// nanoGPT's get_lr, so runs compare with it step for step.
#include <cstdint>
#include <string>

#include "tandem/config/key_names.h"

namespace tandem {

struct Schedule {
  std::string kind = "cosine";  // constant | cosine | linear
  double lr = 0.0;
  double min_lr = 0.0;
  int64_t warmup_steps = 0;
  int64_t total_steps = 0;  // steps in the whole run, where decay ends

  // The rate for the update after `step` optimizer steps (0 for the first);
  // min_lr past total_steps.
  double at(int64_t step) const;

  // Throws a UsageError naming the key at fault as the user set it (`key`):
  // an unknown kind, a rate that is not positive, min_lr above lr (where the
  // kind uses it), a negative warmup, or a warmup that does not end before
  // total_steps.
  void validate(const KeyNames& key = {}) const;
};

}  // namespace tandem
