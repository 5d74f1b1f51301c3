#include "app/dit_settings.h"

#include <torch/torch.h>

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

DitOptions dit_options(const tandem::Config& c, const LatentSet& latents) {
  DitOptions o = DitOptions::preset(c.get_string("dit.preset"));
  if (latents.latents.size(2) != latents.latents.size(3))
    throw tandem::UsageError("latents of " + std::to_string(latents.latents.size(2)) + "x" +
                             std::to_string(latents.latents.size(3)) + ": the DiT takes square latents");
  o.input_size = latents.latents.size(2);
  o.in_channels = latents.latents.size(1);
  o.num_classes = latents.num_users;
  o.patch_size = c.get_int("dit.patch_size");
  if (c.get_int("dit.depth") > 0) o.depth = c.get_int("dit.depth");
  if (c.get_int("dit.hidden_size") > 0) o.hidden_size = c.get_int("dit.hidden_size");
  if (c.get_int("dit.num_heads") > 0) o.num_heads = c.get_int("dit.num_heads");
  o.qk_norm = c.get_bool("dit.qk_norm");
  o.class_dropout_prob = c.get_double("dit.class_dropout");
  o.validate();
  return o;
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
