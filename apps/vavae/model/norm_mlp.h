#pragma once
// The DiT's two layers beyond attention, as LightningDiT has them, each with
// a CPU kernel of its own for float32 (norm_mlp_cpu.cpp): written as tensor
// ops they read and write the activations many times a step on the CPU.
//
// RMSNorm (Llama's): x / sqrt(mean(x^2) + eps) * weight over the last
// dimension, normalised in float32 whatever the input's dtype, so that
// bf16/fp16 activations do not lose the small mean of squares. ATen has no
// fused RMSNorm kernel on the CPU: as tensor ops, 1.6 ms for the tiny DiT's
// [32, 64, 128] on one thread where LayerNorm's kernel takes 0.3.
//
// SwiGLU (DINOv2's SwiGLUFFN): one Linear w12 to twice the hidden width,
// silu(first half) * second half, then w3 back to the input width. With
// hidden = int(2/3 * 4 D) it costs what a 4x GELU MLP costs. Its gate as
// tensor ops is a chunk, silu, a product and, backward, their three
// gradients and a cat: 3.7 ms for the tiny DiT's [32, 64, 2 x 341] on one
// thread; the kernel is ATen's vectorised sigmoid and one loop each way.
#include <torch/nn/module.h>
#include <torch/nn/modules/linear.h>
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

class SwiGLUImpl : public torch::nn::Module {
 public:
  SwiGLUImpl(int64_t dim, int64_t hidden);
  at::Tensor forward(const at::Tensor& x);

  torch::nn::Linear w12{nullptr}, w3{nullptr};
};
TORCH_MODULE(SwiGLU);

// The CPU kernels, differentiable, which forward() takes for float32 CPU
// tensors. rms_norm_cpu: x / sqrt(mean(x^2, -1) + eps) * weight, x of any
// shape whose last dimension is weight's length. swiglu_gate_cpu:
// silu(h[..., :H]) * h[..., H:] for h of last dimension 2H.
at::Tensor rms_norm_cpu(const at::Tensor& x, const at::Tensor& weight, double eps);
at::Tensor swiglu_gate_cpu(const at::Tensor& h);

}  // namespace vavae
