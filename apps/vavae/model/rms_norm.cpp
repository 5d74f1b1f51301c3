#include "model/rms_norm.h"

#include <torch/torch.h>

namespace vavae {

RMSNormImpl::RMSNormImpl(int64_t dim, double eps) : eps_(eps) {
  weight = register_parameter("weight", torch::ones({dim}));
}

at::Tensor RMSNormImpl::forward(const at::Tensor& x) {
  const at::Tensor x32 = x.to(at::kFloat);
  return (x32 * torch::rsqrt(x32.pow(2).mean(-1, /*keepdim=*/true) + eps_)).to(x.scalar_type()) * weight;
}

}  // namespace vavae
