#pragma once
// The SwiGLU feed-forward layer of LightningDiT (DINOv2's SwiGLUFFN): one
// Linear w12 to twice the hidden width, silu(first half) * second half, then
// w3 back to the input width. With hidden = int(2/3 * 4 D) it costs what a
// 4x GELU MLP costs.
#include <torch/nn/module.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/pimpl.h>

#include <cstdint>

namespace vavae {

class SwiGLUImpl : public torch::nn::Module {
 public:
  SwiGLUImpl(int64_t dim, int64_t hidden);
  at::Tensor forward(const at::Tensor& x);

  torch::nn::Linear w12{nullptr}, w3{nullptr};
};
TORCH_MODULE(SwiGLU);

}  // namespace vavae
