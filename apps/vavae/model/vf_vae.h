#pragma once
// The VAE as VA-VAE trains it: the VAE plus linear_proj, a 1x1 convolution
// without bias that maps the latents to the foundation features' width, so
// the VF loss can compare them (model/vae_loss.h). It exists for training
// only: the name is upstream's, and load_vae drops it from trained models,
// since encoding and decoding never use it.
#include <torch/nn/modules/conv.h>

#include <cstdint>

#include "model/vae.h"

namespace vavae {

class VfVaeImpl : public VaeImpl {
 public:
  VfVaeImpl(const VaeOptions& options, int64_t feature_channels);

  torch::nn::Conv2d linear_proj{nullptr};  // embed_dim -> feature_channels
};
TORCH_MODULE(VfVae);

// The tensors of a trained model that are VfVaeImpl's own.
inline constexpr char kVfProjectionPrefix[] = "linear_proj.";

}  // namespace vavae
