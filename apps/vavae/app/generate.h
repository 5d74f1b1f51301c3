#pragma once
// Images from a DiT as sample makes them, for sample's files and for
// train-dit's evaluations by sampling alike: image i of user u starts from
// noise drawn from (seed, u, i), so it is the same on any number of ranks and
// in any batch; Euler with classifier-free guidance (flow/sampler.h), the
// sampler in fp32 around the DiT and the decoder in the run's precision; the
// latents de-normalised with the training latents' statistics and decoded.
#include <ATen/core/Tensor.h>

#include <cstdint>
#include <vector>

#include "app/latent_file.h"
#include "flow/sampler.h"
#include "model/dit.h"
#include "model/vae.h"
#include "tandem/train/precision.h"

namespace vavae {

struct ImageRequest {
  int64_t user = 1;   // 1-based
  int64_t index = 0;  // the image's number for its user
};

// sample's settings as the sampler takes them.
struct GenerateOptions {
  SamplerOptions sampler;
  uint64_t seed = 42;
  tandem::Precision precision = tandem::Precision::FP32;
};

// One batch: [requests, 3, H, W] float32 in [-1, 1] on the DiT's device. The
// DiT and the VAE in eval mode, on one device; `stats` carries the
// training latents' mean and std, and their shape.
at::Tensor generate_images(DitImpl& dit, VaeImpl& vae, const LatentSet& stats,
                           const std::vector<ImageRequest>& requests, const GenerateOptions& options);

// What writing an image as an 8-bit PNG and reading it back gives: [-1, 1]
// rounded to 256 levels. Judging images in memory then judges the files.
at::Tensor as_eight_bit(const at::Tensor& images);

}  // namespace vavae
