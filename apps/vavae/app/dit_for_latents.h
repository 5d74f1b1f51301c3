#pragma once
// The DiT a config describes for given latents: train-dit builds it to
// train, sample builds it again from the config its model file carries.
#include "app/latent_file.h"
#include "model/dit.h"
#include "tandem/config/config.h"

namespace vavae {

// The DiT of these dit.* keys for these latents: input size, channels and
// classes from them. Throws UsageError for latents that are not square, or
// sizes the DiT cannot take (DitOptions::validate). train-dit passes the
// user's keys, read_keys-checked; sample those its model file carries
// (read_fields), which need only make a DiT.
DitOptions dit_options(const DitKeys& keys, const LatentSet& latents);

// (latents - mean) / std per channel, with train.h5's statistics.
at::Tensor normalise(const at::Tensor& latents, const LatentSet& stats);
at::Tensor denormalise(const at::Tensor& latents, const LatentSet& stats);

}  // namespace vavae
