#include "model/vf_vae.h"

#include <torch/nn/options/conv.h>

namespace vavae {

VfVaeImpl::VfVaeImpl(const VaeOptions& options, int64_t feature_channels) : VaeImpl(options) {
  linear_proj = register_module(
      "linear_proj", torch::nn::Conv2d(torch::nn::Conv2dOptions(options.embed_dim, feature_channels, 1).bias(false)));
}

}  // namespace vavae
