#pragma once
// Attention for rows packed end to end (padding-free batches), without a
// mask. A packed sequence's rows must not see one another; a block-diagonal
// mask would say so, but the kernels then compute every query against every
// key of the sequence (T^2, and no causal half skipped), and on a GPU only
// the memory-efficient kernel takes a mask at all. Instead the positions of
// each row are gathered, for attention alone, into rows of their own, padded
// at the end to the longest row of a bucket of rows of about one length, and
// each bucket runs the fused causal kernels; the outputs go back to their
// packed positions. The rest of the model (projections, MLP, head) still
// computes the packed positions, real tokens alone. Gathers and scatters are
// index_select, whose backward is the index_add autograd gives.
#include <ATen/core/Tensor.h>

#include <vector>

namespace tandem::nn {

struct PackedRows {
  // One int64 [R_b, L_b] per bucket: row r's l-th token as a flat position
  // b * T + t of the packed [B, T], and B * T (a zero row) past its end.
  std::vector<at::Tensor> buckets;
  // int64 [B, T]: each packed position's slot in the buckets laid end to
  // end (bucket by bucket, r * L_b + l), and the slot past the last (a zero
  // one) for padding.
  at::Tensor scatter;
  bool defined() const { return scatter.defined(); }
};

// Made on the host from `segments` [B, T] (int64: each position's row
// within its sequence, counted from 0, -1 for padding after the last).
// Rows go longest first into buckets; a bucket takes rows down to 3/4 of its
// first's length, so the padding inside attention stays under a quarter of
// a bucket and the buckets few.
PackedRows packed_rows(const at::Tensor& segments);

// x [B, T, F] -> one [R_b, L_b, F] per bucket, zeros past each row's end.
std::vector<at::Tensor> to_rows(const at::Tensor& x, const PackedRows& rows);

// One [R_b, L_b, F] per bucket -> [B, T, F], zeros at padding.
at::Tensor from_rows(const std::vector<at::Tensor>& ys, const PackedRows& rows);

}  // namespace tandem::nn
