#include "app/dit_for_latents.h"

#include <torch/torch.h>

#include "tandem/config/settings.h"
#include "tandem/error.h"

namespace vavae {

namespace {

void require_stats(const LatentSet& stats) {
  if (!stats.mean.defined())
    throw tandem::UsageError("the latent statistics (mean, std) are missing: they are in latent_features/train.h5");
}

at::Tensor channel_view(const at::Tensor& v, const at::Tensor& like) {
  return v.to(like.device(), like.scalar_type()).view({1, -1, 1, 1});
}

}  // namespace

DitOptions dit_options(const DitKeys& keys, const LatentSet& latents) {
  if (latents.latents.size(2) != latents.latents.size(3))
    throw tandem::UsageError("latents of " + std::to_string(latents.latents.size(2)) + "x" +
                             std::to_string(latents.latents.size(3)) + ": the DiT takes square latents");
  return keys.options(latents.latents.size(2), latents.latents.size(1), latents.num_users);
}

at::Tensor normalise(const at::Tensor& latents, const LatentSet& stats) {
  require_stats(stats);
  return (latents - channel_view(stats.mean, latents)) / channel_view(stats.std, latents).clamp_min(1e-6);
}

at::Tensor denormalise(const at::Tensor& latents, const LatentSet& stats) {
  require_stats(stats);
  return latents * channel_view(stats.std, latents).clamp_min(1e-6) + channel_view(stats.mean, latents);
}

}  // namespace vavae
