#pragma once
// Which floating-point format the forward pass computes in (train.precision).
// Weights, gradients and optimizer state stay fp32 whatever is chosen, but
// for a frozen base's matrices (keep_frozen_in) and, under
// train.master_weights = "sharded", the trained matrices (works_in_half).
#include <ATen/core/Tensor.h>

#include <string>
#include <vector>

#include "tandem/named_tensors.h"

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
// fp32; under fp32 nothing changes. `copy_values` false gives them the dtype
// and not the values (the plan, which reads only shapes and dtypes).
void keep_frozen_in(torch::nn::Module& module, Precision precision, bool copy_values = true);

// train.master_weights = "sharded": whether a trained parameter works in the
// compute precision, its fp32 master kept by the optimizer (AdamW's
// masters): the matrices (two or more dimensions) but those named in
// `kept` (kept_in_fp32). Norms and biases stay fp32, as keep_frozen_in
// leaves them; autocast casts them per product, a few kilobytes.
bool works_in_half(const std::string& name, const at::Tensor& param, const std::vector<std::string>& kept);

// The matrices of `model` that stay fp32 under sharded masters: its
// embeddings (embedding_weights), which a lookup reads a row at a time and
// which tie to the output layer, where rounding would cost most, and
// `task_names` (Task::fp32_weights: layers run with autocast off).
std::vector<std::string> kept_in_fp32(torch::nn::Module& model, const std::vector<std::string>& task_names);

// Converts those of `params` that works_in_half takes to the compute dtype of
// `precision` (fp16 or bf16), in place (set_data: the model, its optimizer
// and hooks see the same tensors). Returns their fp32 values as they were,
// in host memory (on the CPU the old storage, detached), parallel to
// `params`, undefined for the others: the masters' first values. Throws
// std::logic_error under fp32.
std::vector<at::Tensor> to_working_precision(const NamedTensors& params, Precision precision,
                                             const std::vector<std::string>& kept);

}  // namespace tandem
