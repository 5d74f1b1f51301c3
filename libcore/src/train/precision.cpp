#include "tandem/train/precision.h"

#include <torch/torch.h>

#include <algorithm>
#include <stdexcept>

#include "tandem/error.h"
#include "tandem/train/blockwise8.h"

namespace tandem {

Precision resolve_precision(const std::string& value, bool cuda, int cc_major) {
  // bf16 kernels (cuBLAS, tensor cores) arrive with Ampere, compute capability 8.
  const bool bf16_capable = !cuda || cc_major >= 8;
  if (value == "auto") {
    if (!cuda) return Precision::FP32;
    return bf16_capable ? Precision::BF16 : Precision::FP16;
  }
  if (value == "fp32") return Precision::FP32;
  if (value == "fp16") {
    if (!cuda) {
      throw UsageError("train.precision = \"fp16\" needs a GPU: autocast on CPU supports bf16 only; use bf16 or fp32");
    }
    return Precision::FP16;
  }
  if (value == "bf16") {
    if (!bf16_capable) {
      throw UsageError("train.precision = \"bf16\" needs a GPU of compute capability 8.0 or more, this one has " +
                       std::to_string(cc_major) + ".x; use fp16 or fp32");
    }
    return Precision::BF16;
  }
  throw UsageError("train.precision must be one of auto|fp32|fp16|bf16, got \"" + value + "\"");
}

std::string to_string(Precision precision) {
  switch (precision) {
    case Precision::FP16:
      return "fp16";
    case Precision::BF16:
      return "bf16";
    case Precision::FP32:
      break;
  }
  return "fp32";
}

namespace {

at::ScalarType half_type(Precision precision) { return precision == Precision::FP16 ? at::kHalf : at::kBFloat16; }

}  // namespace

void keep_frozen_in(torch::nn::Module& module, Precision precision, bool copy_values) {
  if (precision == Precision::FP32) return;
  const auto half = half_type(precision);
  torch::NoGradGuard no_grad;
  for (auto& p : module.parameters())
    if (!p.requires_grad() && p.dim() >= 2 && p.is_floating_point())
      p.set_data(copy_values ? p.to(half) : at::empty(p.sizes(), p.options().dtype(half)));
}

bool works_in_half(const std::string& name, const at::Tensor& param, const std::vector<std::string>& kept) {
  return param.dim() >= 2 && param.scalar_type() == at::kFloat &&
         std::find(kept.begin(), kept.end(), name) == kept.end();
}

std::vector<std::string> kept_in_fp32(torch::nn::Module& model, const std::vector<std::string>& task_names) {
  std::vector<std::string> names = embedding_weights(model);
  names.insert(names.end(), task_names.begin(), task_names.end());
  return names;
}

std::vector<at::Tensor> to_working_precision(const NamedTensors& params, Precision precision,
                                             const std::vector<std::string>& kept) {
  if (precision == Precision::FP32) throw std::logic_error("to_working_precision: the compute precision is fp32");
  torch::NoGradGuard no_grad;
  std::vector<at::Tensor> masters(params.size());
  for (size_t i = 0; i < params.size(); ++i) {
    const auto& [name, param] = params[i];
    if (!works_in_half(name, param, kept)) continue;
    // In host memory until the optimizer has taken its slices: the device
    // never holds the fp32 model beside the half one.
    masters[i] = param.detach().to(at::kCPU);
    // The parameter's layout kept (a channels-last convolution weight's), so
    // that its runs in memory order are the master's.
    param.set_data(param.to(half_type(precision), /*non_blocking=*/false, /*copy=*/false, at::MemoryFormat::Preserve));
  }
  return masters;
}

}  // namespace tandem
