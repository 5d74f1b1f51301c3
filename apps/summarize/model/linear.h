#pragma once
// A Linear layer's y = x W^T + b for inference, in the GEMM layout that is
// fastest on the CPU for the few rows of a decoding step. LibTorch's linear
// hands MKL the weight as the transposed right-hand matrix; with a handful of
// rows MKL then spends most of the call repacking the whole weight (measured:
// 8 rows through GPT-2's layers, 62 ms in linear, 47 ms as W x^T; its
// 50257-row output head, 44 ms against 20 ms). Better still is to pack the
// weight once, as oneDNN lays it out, and keep it while the weight is
// unchanged (8 rows: GPT-2's layers 55 ms as W x^T, 46.5 packed; its head
// 22.5 against 17.4); that costs a second copy of the weight in memory. One
// row goes to row_product, which reads the weight on every thread.
#include <ATen/core/Tensor.h>

#include <cstdint>

#include "model/weight_copy.h"

namespace summarize {

// The most rows linear takes its own layouts for: past this, LibTorch's
// packed GEMM catches up (measured on GPT-2's shapes: 32 rows, 99 ms
// against 75; 64 rows of the head, even).
inline constexpr int64_t kFewRows = 32;

// x [..., in] -> [..., out], as torch::nn::functional::linear(x, weight,
// bias). Takes its own layouts only where they win: no gradient is being
// recorded, the tensors are on the CPU in fp32, and x has 1 to 32 rows;
// otherwise it is linear itself (which autocast may lower, and which takes a
// LoRA run's half-precision base). The results equal linear's up to float rounding (the sums
// run in another order). With 2 to 32 rows and `packed` given, the weight is
// packed by oneDNN into *packed (where this LibTorch can: compat.h) and the
// result is contiguous; without, it is a transposed view of W x^T, not a
// copy: transposing GPT-2's 50257 x 8 logits took 0.95 ms of a 7 ms tiny
// decoding step, and argmax reads the view in 0.6 ms.
at::Tensor linear(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias = {},
                  WeightCopy* packed = nullptr);

}  // namespace summarize
