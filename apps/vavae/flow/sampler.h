#pragma once
// Sampling from a rectified-flow model: Euler steps of the ODE dx/dt = v(x, t)
// from noise at t = 0 to data at t = 1, on a shifted time grid, with
// classifier-free guidance. Fixes upstream LightningDiT's sampler, which took
// num_steps - 1 steps for num_steps.
#include <ATen/core/Tensor.h>

#include <cstdint>
#include <functional>
#include <vector>

namespace vavae {

// The velocity model: v(x [B, C, h, w], t [B] in [0, 1], y [B] int64) -> x's
// shape. A DiT's forward in eval mode, or a field a test makes by hand.
using VelocityFn = std::function<at::Tensor(const at::Tensor& x, const at::Tensor& t, const at::Tensor& y)>;

struct SamplerOptions {
  int64_t num_steps = 50;  // exactly this many model evaluations (twice the batch where guided)
  // Grid shift s: t' = s t / (1 + (s - 1) t). s < 1 spends more steps near
  // the noise (LightningDiT: 0.3); 1 is the uniform grid.
  double shift = 0.3;
  // v = v_uncond + scale (v_cond - v_uncond). 1 is the conditional model
  // alone, evaluated without the unconditional half.
  double guidance_scale = 1.0;
  // Guide only the first cfg_channels channels (upstream: 3); 0 guides all.
  int64_t cfg_channels = 0;
  // No guidance (the conditional output alone) while the shifted t is below
  // this: the first steps, near the noise, where guidance hurts diversity.
  double cfg_interval_start = 0.125;
  // The label of the unconditional model (the DiT's num_classes); needed when
  // guidance_scale != 1.
  int64_t null_class = -1;

  // Throws UsageError for a guidance scale other than 1 without a
  // null_class. Each value's own range is its sample.* key's (SampleKeys),
  // checked where the job is read.
  void validate() const;
};

// s t / (1 + (s - 1) t): maps [0, 1] onto itself, 0 and 1 fixed.
double shift_timestep(double t, double shift);

// The num_steps + 1 times the sampler visits: shift_timestep(i / num_steps), i = 0 .. num_steps.
std::vector<double> timestep_grid(int64_t num_steps, double shift);

// Integrates from `noise` [B, C, h, w] (the state at t = 0) for labels [B]
// and returns the state at t = 1: x += (t_{i+1} - t_i) v(x, t_i) per step.
// Where guided, one model call takes the batch twice, [x; x] with labels
// [y; null], and the halves are combined. Runs without gradients. Throws
// UsageError when cfg_channels exceeds the channels.
at::Tensor sample_euler(const VelocityFn& model, const at::Tensor& noise, const at::Tensor& labels,
                        const SamplerOptions& options);

}  // namespace vavae
