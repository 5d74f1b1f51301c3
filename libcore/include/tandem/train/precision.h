#pragma once
// Which floating-point format the forward pass computes in (train.precision).
// Weights, gradients and optimizer state stay fp32 whatever is chosen.
#include <string>

namespace tandem {

enum class Precision { FP32, FP16, BF16 };

// `value` is train.precision: auto|fp32|fp16|bf16. auto picks bf16 on GPUs of
// compute capability 8.0 or more, fp16 (with loss scaling) on older GPUs such
// as the T4 (7.5), and fp32 on CPU. `cc_major` is ignored when !cuda. Throws a
// UsageError for an unknown value or a format the device cannot run.
Precision resolve_precision(const std::string& value, bool cuda, int cc_major);

std::string to_string(Precision precision);  // "fp32", "fp16", "bf16"

}  // namespace tandem
