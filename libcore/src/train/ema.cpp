#include "tandem/train/ema.h"

#include <torch/torch.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "tandem/io/checkpoint.h"

namespace tandem {
namespace {

// The module's tensors (`current`, as Ema::averaged gives them) in the Ema's
// order; throws when the names differ.
std::vector<at::Tensor> matching(const NamedTensors& ema, const NamedTensors& current) {
  if (current.size() != ema.size()) {
    throw std::invalid_argument("Ema: the module has " + std::to_string(current.size()) + " tensors, the average " +
                                std::to_string(ema.size()));
  }
  std::vector<at::Tensor> out;
  out.reserve(current.size());
  for (size_t i = 0; i < current.size(); ++i) {
    if (current[i].first != ema[i].first) {
      throw std::invalid_argument("Ema: the module's tensor " + std::to_string(i) + " is '" + current[i].first +
                                  "', the average's '" + ema[i].first + "'");
    }
    out.push_back(current[i].second);
  }
  return out;
}

}  // namespace

Ema::Ema(const torch::nn::Module& module, const std::vector<std::string>& elsewhere)
    : elsewhere_(elsewhere.begin(), elsewhere.end()) {
  torch::NoGradGuard no_grad;
  for (const auto& [name, tensor] : averaged(module)) tensors_.emplace_back(name, tensor.detach().clone());
  num_parameters_ = tensors_.size() - module.buffers().size();
}

NamedTensors Ema::averaged(const torch::nn::Module& module) const {
  NamedTensors out;
  for (auto& [name, tensor] : trained_state(module))
    if (!elsewhere_.count(name)) out.emplace_back(name, tensor);
  return out;
}

void Ema::update(const torch::nn::Module& module, double decay) {
  if (!(decay >= 0.0 && decay <= 1.0))
    throw std::invalid_argument("Ema: decay must be in [0, 1], got " + std::to_string(decay));
  const std::vector<at::Tensor> current = matching(tensors_, averaged(module));
  torch::NoGradGuard no_grad;
  // One multi-tensor lerp (average += (1 - decay) (param - average)) rather
  // than a scale and an add per parameter: a DiT-XL has hundreds of
  // parameters, the update runs every step, and one pass over the average
  // moves three fifths of the bytes of two.
  std::vector<at::Tensor> averages, params;
  for (size_t i = 0; i < num_parameters_; ++i) {
    averages.push_back(tensors_[i].second);
    params.push_back(current[i].detach());
  }
  if (!averages.empty()) at::_foreach_lerp_(averages, params, 1.0 - decay);
  for (size_t i = num_parameters_; i < tensors_.size(); ++i) tensors_[i].second.copy_(current[i]);
}

void Ema::copy_to(torch::nn::Module& module) const {
  const std::vector<at::Tensor> current = matching(tensors_, averaged(module));
  torch::NoGradGuard no_grad;
  for (size_t i = 0; i < current.size(); ++i) current[i].copy_(tensors_[i].second);
}

}  // namespace tandem
