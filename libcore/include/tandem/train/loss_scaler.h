#pragma once
// Dynamic loss scaling for fp16, as torch.cuda.amp.GradScaler: the loss is
// multiplied by scale() before backward so that small gradients do not flush
// to zero in fp16, and the gradients are divided by it before clipping and the
// optimizer step (the Trainer folds that into the step's one multiply). A
// step whose gradients hold inf or NaN is skipped and the scale halved; after
// growth_interval good steps in a row it doubles. bf16 and fp32 have fp32's
// range and need none of it: a disabled scaler has scale 1 and never skips.
#include <cstdint>

#include "tandem/io/checkpoint.h"

namespace tandem {

struct LossScalerOptions {
  double init_scale = 65536.0;
  double growth_factor = 2.0;
  double backoff_factor = 0.5;
  int64_t growth_interval = 2000;
};

class LossScaler {
 public:
  explicit LossScaler(bool enabled, LossScalerOptions options = {});

  bool enabled() const { return enabled_; }
  double scale() const { return enabled_ ? scale_ : 1.0; }
  int64_t skipped() const { return skipped_; }  // steps skipped for overflow

  // Records whether this step's gradients were all finite (on every rank: the
  // caller reduces the flag) and returns whether the optimizer should step.
  bool update(bool grads_finite);

  // "loss_scale", "loss_scale_good_steps", "loss_scale_skipped". A disabled
  // scaler keeps (and saves) the initial scale, so a run resumed in fp16 from
  // a bf16 checkpoint starts where a fresh fp16 run would.
  CheckpointState state() const;
  // Throws a UsageError naming a missing or ill-typed key; nothing changes then.
  void load_state(const CheckpointState& state);

 private:
  bool enabled_;
  LossScalerOptions options_;
  double scale_;
  int64_t good_steps_ = 0;
  int64_t skipped_ = 0;
};

}  // namespace tandem
