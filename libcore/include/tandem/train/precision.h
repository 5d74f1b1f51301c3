#pragma once
// Which floating-point format the forward pass computes in (train.precision).
// Weights, gradients and optimizer state stay fp32 whatever is chosen, but
// for a frozen base's matrices (keep_frozen_in).
#include <string>

namespace torch::nn {
class Module;
}

namespace tandem {

enum class Precision { FP32, FP16, BF16 };

// `value` is train.precision: auto|fp32|fp16|bf16. auto picks bf16 on GPUs of
// compute capability 8.0 or more, fp16 (with loss scaling) on older GPUs such
// as the T4 (7.5), and fp32 on CPU. `cc_major` is ignored when !cuda. Throws a
// UsageError for an unknown value or a format the device cannot run.
Precision resolve_precision(const std::string& value, bool cuda, int cc_major);

std::string to_string(Precision precision);  // "fp32", "fp16", "bf16"

// A frozen base's rule (Task::frozen_base): the module's frozen matrices
// (parameters without gradients, of two or more dimensions) in the compute
// dtype when `precision` is fp16 or bf16, where nothing updates them and
// autocast would cast them for every product anyway. Norms and biases stay
// fp32; under fp32 nothing changes.
void keep_frozen_in(torch::nn::Module& module, Precision precision);

}  // namespace tandem
