#pragma once
// RMSNorm (Llama's, as LightningDiT uses it): x / sqrt(mean(x^2) + eps) * weight
// over the last dimension, normalised in float32 whatever the input's dtype,
// so that bf16/fp16 activations do not lose the small mean of squares.
#include <torch/nn/module.h>
#include <torch/nn/pimpl.h>

#include <cstdint>

namespace vavae {

class RMSNormImpl : public torch::nn::Module {
 public:
  explicit RMSNormImpl(int64_t dim, double eps = 1e-6);
  at::Tensor forward(const at::Tensor& x);

  at::Tensor weight;  // ones at first

 private:
  double eps_;
};
TORCH_MODULE(RMSNorm);

}  // namespace vavae
