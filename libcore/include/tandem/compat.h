#pragma once
// The one place that knows which LibTorch it is built against: tandem builds
// with LibTorch 2.7 and newer (cmake/FindTorchOrdered.cmake checks), whose C++
// APIs have moved in a few calls. Everything else calls these instead, so a new
// LibTorch means editing compat.cpp only.
#include <ATen/core/Tensor.h>
#include <c10/core/ScalarType.h>

namespace tandem::compat {

// Autocast as the current thread sees it for one device type: CUDA when `cuda`,
// else CPU.
struct AutocastState {
  bool enabled = false;
  at::ScalarType dtype = at::kFloat;
};

AutocastState autocast_state(bool cuda);
void set_autocast_state(bool cuda, const AutocastState& state);

// softmax(q k^T / sqrt(D) + mask) v for q [B,H,Tq,D] and k, v [B,H,Tk,D], as
// torch.nn.functional.scaled_dot_product_attention computes it: `attn_mask`
// (optional) is bool, true where a query may see a key, broadcastable to
// [B,H,Tq,Tk]; `is_causal` masks with tril(ones(Tq, Tk)), aligned top-left
// (so right only when Tq == Tk), and takes no attn_mask; dropout applies
// whenever dropout_p > 0. A query that may see no key gives NaN. LibTorch
// runs fused kernels (flash, memory-efficient) where the inputs allow.
at::Tensor scaled_dot_product_attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                                        const at::Tensor& attn_mask, double dropout_p, bool is_causal);

// oneDNN's linear over a weight reordered once into its blocked layout for
// products of about `rows` rows: LibTorch's private ops mkldnn::
// _reorder_linear_weight and mkldnn::_linear_pointwise, which torch.compile's
// CPU code calls on frozen weights. pack_linear_weight(weight [out, in] float)
// gives an opaque tensor, or an undefined one where this LibTorch has no such
// ops or refuses the weight (no oneDNN, another schema); then callers keep to
// at::linear. packed_linear(x [..., in], packed, bias [out] or undefined) is
// x weight^T + bias, [..., out], contiguous. For inference: no gradient flows.
at::Tensor pack_linear_weight(const at::Tensor& weight, int64_t rows);
at::Tensor packed_linear(const at::Tensor& x, const at::Tensor& packed, const at::Tensor& bias);

}  // namespace tandem::compat
