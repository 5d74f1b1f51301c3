#include "model/swiglu.h"

#include <torch/torch.h>

#include "model/swiglu_cpu.h"

namespace vavae {

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
