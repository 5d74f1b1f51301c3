#pragma once
// Rectified flow, the training objective of the DiT (as LightningDiT's
// transport with a linear path and velocity prediction): a straight line from
// noise x0 at t = 0 to data x1 at t = 1, x_t = t x1 + (1 - t) x0, along which
// the model learns the constant velocity x1 - x0. Every draw comes from a
// generator the caller passes, so a run's randomness is its seed's alone.
#include <ATen/core/Generator.h>
#include <ATen/core/Tensor.h>

#include <cstdint>
#include <string>

namespace vavae {

enum class TimestepSampling {
  kUniform,    // t ~ U(0, 1)
  kLogNormal,  // t = sigmoid(u), u ~ N(0, 1): logit-normal, denser around 0.5 (LightningDiT's use_lognorm)
};

// "uniform" or "lognormal"; `key` names the setting in the UsageError for any other value.
TimestepSampling parse_timestep_sampling(const std::string& name, const std::string& key);

// n timesteps [n] float32, drawn on the generator's device and returned on `device`.
at::Tensor sample_timesteps(int64_t n, TimestepSampling sampling, at::Generator generator, const at::Device& device);

struct FlowPair {
  at::Tensor t;         // [N]
  at::Tensor x_t;       // t x1 + (1 - t) x0, x1's shape
  at::Tensor velocity;  // the target, x1 - x0
};

// The pair for given noise x0 and timesteps t [N], x1 [N, ...].
FlowPair make_flow_pair(const at::Tensor& x1, const at::Tensor& x0, const at::Tensor& t);

// The same with x0 ~ N(0, I) and t drawn from `generator` (noise first, then
// timesteps), on the generator's device and moved to x1's.
FlowPair sample_flow_pair(const at::Tensor& x1, TimestepSampling sampling, at::Generator generator);

struct FlowLoss {
  at::Tensor total;   // mse + cosine_weight * cosine
  at::Tensor mse;     // mean over all elements of (predicted - target)^2
  at::Tensor cosine;  // mean over samples of 1 - cos(predicted_n, target_n), each sample flattened
};

// The velocity-matching loss, in float32. The cosine term, optional
// (cosine_weight 0 leaves it out of the total but still reports it), rewards
// the right direction whatever the length. LightningDiT's own cosine term
// compares the channel vectors at each position instead; per sample is
// coarser and cheaper, and what this project specifies.
FlowLoss flow_loss(const at::Tensor& predicted, const at::Tensor& target, double cosine_weight = 0.0);

}  // namespace vavae
