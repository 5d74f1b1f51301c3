#include "tandem/compat.h"

#include <ATen/ATen.h>
#include <ATen/autocast_mode.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <c10/util/Exception.h>

#include <optional>
#include <vector>

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

namespace {

// The ops are private and their C++ argument types have moved between
// releases (c10::string_view became std::string_view), so they are looked up
// by name and called boxed, with IValues, which every release takes alike.
std::optional<c10::OperatorHandle> find_op(const char* name) {
  return c10::Dispatcher::singleton().findOp(c10::OperatorName(name, ""));
}

at::Tensor call(const c10::OperatorHandle& op, std::vector<c10::IValue> stack) {
  op.callBoxed(stack);
  return stack.front().toTensor();
}

struct LinearOps {
  std::optional<c10::OperatorHandle> reorder = find_op("mkldnn::_reorder_linear_weight");
  std::optional<c10::OperatorHandle> linear = find_op("mkldnn::_linear_pointwise");
};

const LinearOps& linear_ops() {
  static const LinearOps ops;
  return ops;
}

}  // namespace

at::Tensor pack_linear_weight(const at::Tensor& weight, int64_t rows) {
  const LinearOps& ops = linear_ops();
  // userEnabledMkldnn: torch.backends.mkldnn.enabled = False (or its C++
  // setter) keeps LibTorch off oneDNN, and so does it keep us.
  if (!ops.reorder || !ops.linear || !at::hasMKLDNN() || !at::globalContext().userEnabledMkldnn() ||
      !weight.device().is_cpu() || weight.scalar_type() != at::kFloat)
    return {};
  // Earlier releases reordered only a weight already in oneDNN's layout, and a
  // build may lack the kernel: a refusal means no packing, not an error.
  try {
    return call(*ops.reorder, {weight.detach(), c10::IValue(rows)});
  } catch (const c10::Error&) {
    return {};
  }
}

// Only called with what pack_linear_weight returned, so the op exists.
at::Tensor packed_linear(const at::Tensor& x, const at::Tensor& packed, const at::Tensor& bias) {
  return call(*linear_ops().linear,
              {x, packed, bias.defined() ? c10::IValue(bias.detach()) : c10::IValue(), c10::IValue("none"),
               c10::IValue(c10::List<std::optional<at::Scalar>>()), c10::IValue()});
}

}  // namespace tandem::compat
