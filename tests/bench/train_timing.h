#pragma once
// How both sides of a training bench time their steps (bench_timing.py does
// the same in Python): warm-up steps first, untimed, since the first step
// allocates the optimizer's state and warms the allocator; then the timed
// steps, and on a CPU the time of each phase of a step.
#include <ATen/Tensor.h>
#include <c10/core/Device.h>

#include <cstdint>
#include <functional>

namespace bench {

// One side's figures for one run.
struct Figures {
  double items_per_s = 0;  // tokens or images
  double loss_first = 0, loss_last = 0;
  int64_t parameters = 0;
  double forward_ms = -1, backward_ms = -1, optimizer_ms = -1;  // per step, on a CPU only
};

// `warmup` and then `steps` training steps, each loss() (forward and loss),
// backward, then update() (the optimizer's step and dropping the gradients).
// items_per_s counts items_per_step a step; parameters is left to the caller.
Figures time_training(const c10::Device& device, int64_t warmup, int64_t steps, double items_per_step,
                      const std::function<at::Tensor()>& loss, const std::function<void()>& update);

}  // namespace bench
