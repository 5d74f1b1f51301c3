#include "tandem/train/precision.h"

#include <torch/torch.h>

#include "tandem/error.h"

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

void keep_frozen_in(torch::nn::Module& module, Precision precision) {
  if (precision == Precision::FP32) return;
  const auto half = precision == Precision::FP16 ? at::kHalf : at::kBFloat16;
  torch::NoGradGuard no_grad;
  for (auto& p : module.parameters())
    if (!p.requires_grad() && p.dim() >= 2 && p.is_floating_point()) p.set_data(p.to(half));
}

}  // namespace tandem
