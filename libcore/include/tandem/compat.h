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

}  // namespace tandem::compat
