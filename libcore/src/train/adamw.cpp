#include "tandem/train/adamw.h"

#include <torch/torch.h>

#include <cmath>
#include <map>
#include <stdexcept>
#include <unordered_set>
#include <utility>

#include "tandem/error.h"
#include "tandem/text/first_few.h"

namespace tandem {
namespace {

std::string describe(const at::Tensor& tensor) {
  std::string shape = "[";
  for (const int64_t size : tensor.sizes()) shape += (shape.size() > 1 ? "," : "") + std::to_string(size);
  return std::string(c10::toString(tensor.scalar_type())) + " " + shape + "]";
}

bool is_step_count(const at::Tensor& tensor) {
  return tensor.dim() == 0 && at::isIntegralType(tensor.scalar_type(), /*includeBool=*/false) &&
         tensor.item<int64_t>() >= 0;
}

}  // namespace

AdamW::AdamW(NamedTensors params, AdamWOptions options, DecayRule decay)
    : params_(std::move(params)), options_(options) {
  std::unordered_set<std::string> seen;
  slots_.reserve(params_.size());
  for (const auto& [name, param] : params_) {
    if (!param.defined()) throw std::invalid_argument("AdamW: parameter '" + name + "' is undefined");
    if (!seen.insert(name).second) throw std::invalid_argument("AdamW: parameter '" + name + "' given twice");
    // Allocated up front, not at the first step as torch does, so that state()
    // always has the same entries; zeros make the first update identical.
    Slot slot;
    slot.exp_avg = torch::zeros_like(param, at::MemoryFormat::Preserve);
    slot.exp_avg_sq = torch::zeros_like(param, at::MemoryFormat::Preserve);
    slot.decay = decay(name, param);
    slots_.push_back(std::move(slot));
  }
}

// The operations and their order are torch::optim::AdamW's, so that results
// agree with it to the bit rather than merely to rounding. Each runs as one
// multi-tensor (_foreach_) call over every parameter that shares a step count
// (normally all of them): on a GPU that is a handful of fused launches per step
// instead of nine per parameter, and on any device the same arithmetic per
// element as the one-tensor-at-a-time loop.
void AdamW::step(double lr) {
  torch::NoGradGuard no_grad;
  const double beta1 = options_.beta1;
  const double beta2 = options_.beta2;
  // Step count after this update -> the slots at that count.
  std::map<int64_t, std::vector<size_t>> groups;
  for (size_t i = 0; i < params_.size(); ++i)
    if (params_[i].second.grad().defined()) groups[slots_[i].step + 1].push_back(i);

  for (const auto& [step, members] : groups) {
    std::vector<at::Tensor> params, grads, exp_avgs, exp_avg_sqs, decayed;
    for (size_t i : members) {
      Slot& slot = slots_[i];
      slot.step = step;
      params.push_back(params_[i].second);
      grads.push_back(params_[i].second.grad());
      exp_avgs.push_back(slot.exp_avg);
      exp_avg_sqs.push_back(slot.exp_avg_sq);
      if (slot.decay) decayed.push_back(params_[i].second);
    }
    if (options_.weight_decay != 0.0 && !decayed.empty()) at::_foreach_mul_(decayed, 1.0 - lr * options_.weight_decay);
    const double bias_correction1 = 1.0 - std::pow(beta1, step);
    const double bias_correction2 = 1.0 - std::pow(beta2, step);
    at::_foreach_mul_(exp_avgs, beta1);
    at::_foreach_add_(exp_avgs, grads, 1.0 - beta1);
    at::_foreach_mul_(exp_avg_sqs, beta2);
    at::_foreach_addcmul_(exp_avg_sqs, grads, grads, 1.0 - beta2);
    std::vector<at::Tensor> denom = at::_foreach_sqrt(exp_avg_sqs);
    at::_foreach_div_(denom, std::sqrt(bias_correction2));
    at::_foreach_add_(denom, options_.eps);
    at::_foreach_addcdiv_(params, exp_avgs, denom, -lr / bias_correction1);
  }
}

void AdamW::zero_grad() {
  for (auto& [name, param] : params_) param.mutable_grad().reset();
}

NamedTensors AdamW::state() const {
  NamedTensors out;
  out.reserve(3 * params_.size());
  for (size_t i = 0; i < params_.size(); ++i) {
    const std::string& name = params_[i].first;
    const Slot& slot = slots_[i];
    out.emplace_back(name + ".exp_avg", slot.exp_avg);
    out.emplace_back(name + ".exp_avg_sq", slot.exp_avg_sq);
    out.emplace_back(name + ".step", torch::tensor(slot.step, torch::kInt64).reshape({}));
  }
  return out;
}

void AdamW::load_state(const NamedTensors& state) {
  std::map<std::string, const at::Tensor*> given;
  for (const auto& [name, tensor] : state) given.emplace(name, &tensor);

  std::vector<std::string> missing, misshapen;
  std::vector<const at::Tensor*> sources;  // exp_avg, exp_avg_sq, step per parameter
  for (const auto& [name, param] : params_) {
    for (const char* field : {".exp_avg", ".exp_avg_sq", ".step"}) {
      const std::string key = name + field;
      const auto it = given.find(key);
      if (it == given.end()) {
        missing.push_back(key);
        continue;
      }
      const at::Tensor& tensor = *it->second;
      const bool is_step = std::string(field) == ".step";
      const bool fits = is_step ? is_step_count(tensor) : tensor.sizes() == param.sizes();
      if (!fits) {
        misshapen.push_back(key + ": expected " +
                            (is_step ? std::string("a 0-d integer of 0 or more") : describe(param)) + ", got " +
                            describe(tensor));
      }
      sources.push_back(&tensor);
      given.erase(it);
    }
  }
  std::vector<std::string> unexpected;
  for (const auto& [name, tensor] : given) unexpected.push_back(name);

  if (!missing.empty() || !unexpected.empty() || !misshapen.empty()) {
    std::string message = "optimizer state does not match the parameters";
    if (!missing.empty()) message += "; " + std::to_string(missing.size()) + " missing: " + first_few(missing);
    if (!unexpected.empty()) {
      message += "; " + std::to_string(unexpected.size()) + " unexpected: " + first_few(unexpected);
    }
    if (!misshapen.empty()) {
      message += "; " + std::to_string(misshapen.size()) + " of another shape or type: " + first_few(misshapen);
    }
    throw UsageError(message);
  }

  torch::NoGradGuard no_grad;
  for (size_t i = 0; i < slots_.size(); ++i) {
    slots_[i].exp_avg.copy_(*sources[3 * i]);
    slots_[i].exp_avg_sq.copy_(*sources[3 * i + 1]);
    slots_[i].step = sources[3 * i + 2]->item<int64_t>();
  }
}

}  // namespace tandem
