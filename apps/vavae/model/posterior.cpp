#include "model/posterior.h"

#include <ATen/ATen.h>

#include <stdexcept>
#include <string>

namespace vavae {

Posterior Posterior::from_moments(const at::Tensor& moments) {
  if (moments.dim() != 4 || moments.size(1) % 2 != 0) {
    throw std::invalid_argument("Posterior: moments must be [N, 2 * C, h, w], got " + std::to_string(moments.dim()) +
                                " dimensions");
  }
  const auto halves = moments.chunk(2, 1);
  return {halves[0], halves[1].clamp(-30.0, 20.0)};
}

at::Tensor Posterior::std() const { return at::exp(0.5 * logvar); }

at::Tensor Posterior::sample(const at::Tensor& noise) const {
  if (!noise.sizes().equals(mean.sizes()))
    throw std::invalid_argument("Posterior::sample: noise must have the latents' shape");
  return mean + std() * noise.to(mean.options());
}

at::Tensor Posterior::sample(at::Generator generator) const {
  const at::Tensor noise = at::randn(mean.sizes(), generator, mean.options().device(generator.device()));
  return sample(noise.to(mean.device()));
}

at::Tensor Posterior::kl() const { return 0.5 * (mean.pow(2) + at::exp(logvar) - 1.0 - logvar).sum({1, 2, 3}); }

}  // namespace vavae
