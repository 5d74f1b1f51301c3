#pragma once
// The VAE's posterior q(z|x): a diagonal Gaussian per latent element, as LDM's
// DiagonalGaussianDistribution. Sampling takes its noise or its generator
// explicitly, so that which draw a rank makes never depends on what else used
// the global generator.
#include <ATen/core/Generator.h>
#include <ATen/core/Tensor.h>

namespace vavae {

struct Posterior {
  // Both [N, embed_dim, h, w]; logvar already clamped to [-30, 20] (as LDM
  // clamps it: exp(0.5 * logvar) stays finite in float32).
  at::Tensor mean, logvar;

  // From the encoder's moments [N, 2 * embed_dim, h, w]: mean first, then logvar.
  static Posterior from_moments(const at::Tensor& moments);

  at::Tensor std() const;

  // mean + std * noise, noise standard normal of mean's shape.
  at::Tensor sample(const at::Tensor& noise) const;

  // The same with noise drawn from `generator`, on the generator's device and
  // then moved to mean's: a CPU generator gives the same draw whatever device
  // the model runs on, a CUDA generator avoids the copy.
  at::Tensor sample(at::Generator generator) const;

  // KL(q || N(0, I)) per sample, [N]: 0.5 * sum(mean^2 + var - 1 - logvar)
  // over the latent elements, as LDM's kl().
  at::Tensor kl() const;
};

}  // namespace vavae
