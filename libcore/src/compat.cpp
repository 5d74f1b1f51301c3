#include "tandem/compat.h"

#include <ATen/ATen.h>
#include <ATen/autocast_mode.h>
#include <torch/version.h>

#include <cmath>
#include <limits>

// True when the LibTorch being compiled against is MAJOR.MINOR or newer.
#define TANDEM_TORCH_AT_LEAST(major, minor) \
  (TORCH_VERSION_MAJOR > (major) || (TORCH_VERSION_MAJOR == (major) && TORCH_VERSION_MINOR >= (minor)))

namespace tandem::compat {

// LibTorch 2.4 made autocast's state per device type, at::autocast::*(DeviceType),
// and deprecated the per-device functions (set_enabled for CUDA, set_cpu_enabled,
// set_autocast_gpu_dtype...) that are all 1.13 through 2.3 have.
#if TANDEM_TORCH_AT_LEAST(2, 4)

AutocastState autocast_state(bool cuda) {
  const at::DeviceType device = cuda ? at::kCUDA : at::kCPU;
  return {at::autocast::is_autocast_enabled(device), at::autocast::get_autocast_dtype(device)};
}

void set_autocast_state(bool cuda, const AutocastState& state) {
  const at::DeviceType device = cuda ? at::kCUDA : at::kCPU;
  at::autocast::set_autocast_dtype(device, state.dtype);
  at::autocast::set_autocast_enabled(device, state.enabled);
}

#else

AutocastState autocast_state(bool cuda) {
  if (cuda) return {at::autocast::is_enabled(), at::autocast::get_autocast_gpu_dtype()};
  return {at::autocast::is_cpu_enabled(), at::autocast::get_autocast_cpu_dtype()};
}

void set_autocast_state(bool cuda, const AutocastState& state) {
  if (cuda) {
    at::autocast::set_autocast_gpu_dtype(state.dtype);
    at::autocast::set_enabled(state.enabled);
  } else {
    at::autocast::set_autocast_cpu_dtype(state.dtype);
    at::autocast::set_cpu_enabled(state.enabled);
  }
}

#endif

// at::scaled_dot_product_attention arrived in 2.0.
#if TANDEM_TORCH_AT_LEAST(2, 0)

at::Tensor scaled_dot_product_attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                                        const at::Tensor& attn_mask, double dropout_p, bool is_causal) {
  // `{}` rather than a named optional: the parameter is c10::optional before
  // 2.4 and std::optional after.
  if (attn_mask.defined()) return at::scaled_dot_product_attention(q, k, v, attn_mask, dropout_p, is_causal);
  return at::scaled_dot_product_attention(q, k, v, {}, dropout_p, is_causal);
}

#else

at::Tensor scaled_dot_product_attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                                        const at::Tensor& attn_mask, double dropout_p, bool is_causal) {
  at::Tensor allowed = attn_mask;
  if (is_causal) allowed = at::ones({q.size(-2), k.size(-2)}, q.options().dtype(at::kBool)).tril();
  at::Tensor scores = at::matmul(q * (1.0 / std::sqrt(static_cast<double>(q.size(-1)))), k.transpose(-2, -1));
  if (allowed.defined()) scores = scores.masked_fill(allowed.logical_not(), -std::numeric_limits<double>::infinity());
  at::Tensor weights = at::softmax(scores, -1);
  if (dropout_p > 0) weights = at::dropout(weights, dropout_p, /*train=*/true);
  return at::matmul(weights, v);
}

#endif

}  // namespace tandem::compat
