#pragma once
// One row times a matrix on every intra-op thread. MKL runs a one-row product
// on the calling thread alone, and a decoding step of one row is bound by
// reading the weights: perf showed LibTorch's second thread spinning for a
// third of GPT-2's batch-1 generation while the first read them.
#include <ATen/core/Tensor.h>

namespace summarize {

// row [1, k] times m [k, n], plus bias [n] when given: [1, n], each thread
// reading its own slice of m's columns. m may be a transposed view (a Linear
// weight's .t()); row and m on the CPU, no gradient recorded.
at::Tensor row_product(const at::Tensor& row, const at::Tensor& m, const at::Tensor& bias = {});

}  // namespace summarize
