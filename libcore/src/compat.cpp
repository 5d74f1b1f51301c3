#include "tandem/compat.h"

#include <ATen/ATen.h>
#include <ATen/autocast_mode.h>

namespace tandem::compat {

// Autocast's state is per device type from LibTorch 2.4 on; the per-device
// functions of earlier releases (set_enabled for CUDA, set_cpu_enabled, ...)
// are deprecated.
AutocastState autocast_state(bool cuda) {
  const at::DeviceType device = cuda ? at::kCUDA : at::kCPU;
  return {at::autocast::is_autocast_enabled(device), at::autocast::get_autocast_dtype(device)};
}

void set_autocast_state(bool cuda, const AutocastState& state) {
  const at::DeviceType device = cuda ? at::kCUDA : at::kCPU;
  at::autocast::set_autocast_dtype(device, state.dtype);
  at::autocast::set_autocast_enabled(device, state.enabled);
}

at::Tensor scaled_dot_product_attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                                        const at::Tensor& attn_mask, double dropout_p, bool is_causal) {
  // `{}` rather than a named optional: the parameter's optional type changed
  // from c10::optional to std::optional in 2.4.
  if (attn_mask.defined()) return at::scaled_dot_product_attention(q, k, v, attn_mask, dropout_p, is_causal);
  return at::scaled_dot_product_attention(q, k, v, {}, dropout_p, is_causal);
}

}  // namespace tandem::compat
