#include "model/rms_norm.h"

#include <torch/torch.h>

#include "model/rms_norm_cpu.h"

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

}  // namespace vavae
