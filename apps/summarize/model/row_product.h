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

// Whether this CPU runs row_product over a transposed float weight (m = W.t()
// of a contiguous W) with tandem's own AVX2 loop, which reads W as stored as
// fast as MKL reads a row-major copy of W^T, or faster. Where not, MKL reads
// such a copy faster than the transposed view (GPT-2's head: 9.4 ms against
// 13.4), worth its memory for a weight as large as an output head.
bool row_product_reads_weights_as_stored();

}  // namespace summarize
