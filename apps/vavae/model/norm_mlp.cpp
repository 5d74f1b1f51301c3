#include "model/norm_mlp.h"

#include <torch/torch.h>

namespace vavae {

RMSNormImpl::RMSNormImpl(int64_t dim, double eps) : eps_(eps) {
  weight = register_parameter("weight", torch::ones({dim}));
}

at::Tensor RMSNormImpl::forward(const at::Tensor& x) {
  if (x.device().is_cpu() && x.scalar_type() == at::kFloat && weight.scalar_type() == at::kFloat &&
      x.size(-1) == weight.numel())
    return rms_norm_cpu(x, weight, eps_);
  const at::Tensor x32 = x.to(at::kFloat);
  return (x32 * torch::rsqrt(x32.pow(2).mean(-1, /*keepdim=*/true) + eps_)).to(x.scalar_type()) * weight;
}

SwiGLUImpl::SwiGLUImpl(int64_t dim, int64_t hidden) {
  w12 = register_module("w12", torch::nn::Linear(dim, 2 * hidden));
  w3 = register_module("w3", torch::nn::Linear(hidden, dim));
}

at::Tensor SwiGLUImpl::forward(const at::Tensor& x) {
  const at::Tensor h = w12(x);
  if (h.device().is_cpu() && h.scalar_type() == at::kFloat) return w3(swiglu_gate_cpu(h));
  const auto halves = h.chunk(2, -1);
  return w3(torch::silu(halves[0]) * halves[1]);
}

}  // namespace vavae
