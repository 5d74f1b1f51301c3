#include "flow/rectified_flow.h"

#include <torch/torch.h>

#include <stdexcept>
#include <vector>

#include "tandem/error.h"

namespace vavae {

TimestepSampling parse_timestep_sampling(const std::string& name, const std::string& key) {
  if (name == "uniform") return TimestepSampling::kUniform;
  if (name == "lognormal") return TimestepSampling::kLogNormal;
  throw tandem::UsageError(key + ": unknown timestep sampling '" + name + "' (expected uniform or lognormal)");
}

at::Tensor sample_timesteps(int64_t n, TimestepSampling sampling, at::Generator generator, const at::Device& device) {
  const auto options = torch::TensorOptions().dtype(torch::kFloat).device(generator.device());
  const at::Tensor t = sampling == TimestepSampling::kUniform ? at::rand({n}, generator, options)
                                                              : torch::sigmoid(at::randn({n}, generator, options));
  return t.to(device);
}

FlowPair make_flow_pair(const at::Tensor& x1, const at::Tensor& x0, const at::Tensor& t) {
  if (!x0.sizes().equals(x1.sizes()) || t.dim() != 1 || t.size(0) != x1.size(0)) {
    throw std::invalid_argument("make_flow_pair: x0 must have x1's shape and t be [N], got x1 " + c10::str(x1.sizes()) +
                                ", x0 " + c10::str(x0.sizes()) + ", t " + c10::str(t.sizes()));
  }
  std::vector<int64_t> shape(x1.dim(), 1);
  shape[0] = x1.size(0);
  const at::Tensor tx = t.to(x1.scalar_type()).reshape(shape);
  return {t, tx * x1 + (1 - tx) * x0, x1 - x0};
}

FlowPair sample_flow_pair(const at::Tensor& x1, TimestepSampling sampling, at::Generator generator) {
  const at::Tensor x0 = at::randn(x1.sizes(), generator, x1.options().device(generator.device())).to(x1.device());
  const at::Tensor t = sample_timesteps(x1.size(0), sampling, generator, x1.device());
  return make_flow_pair(x1, x0, t);
}

FlowLoss flow_loss(const at::Tensor& predicted, const at::Tensor& target, double cosine_weight) {
  if (!predicted.sizes().equals(target.sizes())) {
    throw std::invalid_argument("flow_loss: predicted " + c10::str(predicted.sizes()) + " and target " +
                                c10::str(target.sizes()) + " differ in shape");
  }
  namespace F = torch::nn::functional;
  // In float32 whatever the model's output dtype, as the mean of many small
  // squares loses digits in half precision.
  const at::Tensor p32 = predicted.to(torch::kFloat), t32 = target.to(torch::kFloat);
  FlowLoss loss;
  loss.mse = (p32 - t32).pow(2).mean();
  const auto cosine = [](const at::Tensor& a, const at::Tensor& b) {
    return (1 - F::cosine_similarity(a.flatten(1), b.flatten(1), F::CosineSimilarityFuncOptions().dim(1))).mean();
  };
  if (cosine_weight == 0.0) {
    // Reported only: no graph for a term that adds nothing.
    loss.cosine = cosine(p32.detach(), t32.detach());
    loss.total = loss.mse;
  } else {
    loss.cosine = cosine(p32, t32);
    loss.total = loss.mse + cosine_weight * loss.cosine;
  }
  return loss;
}

}  // namespace vavae
