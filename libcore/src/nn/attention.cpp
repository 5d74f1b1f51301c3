#include "tandem/nn/attention.h"

#include <ATen/ATen.h>

#include <stdexcept>
#include <string>

#include "tandem/compat.h"

namespace tandem::nn {

namespace {

// LibTorch's fused attention kernels read each head's features as one run
// and take any input whose last stride is not 1 (a transposed product, as
// summarize's few-row linear gives) to the unfused path instead, which among
// other things scales the whole of K: in GPT-2's batched decoding, 3 MB of
// cached keys a layer and a step. A copy of such an input costs less.
at::Tensor dense_rows(const at::Tensor& x) { return x.stride(-1) == 1 ? x : x.contiguous(); }

}  // namespace

at::Tensor attention_mask(int64_t tq, int64_t tk, bool causal, const at::Tensor& key_mask,
                          const c10::Device& device) {
  // Without a mask tensor the fused kernels run fastest. Their own causal
  // mask is aligned top-left: right when queries and keys are the same
  // positions; a single last query sees every key anyway.
  if (!key_mask.defined() && (!causal || tq == 1 || tq == tk)) return {};
  const auto options = at::TensorOptions().dtype(at::kLong).device(device);
  const at::Tensor key_pos = at::arange(tk, options).unsqueeze(0);
  const at::Tensor query_pos = at::arange(tk - tq, tk, options).unsqueeze(1);
  at::Tensor allowed;  // [Tq, Tk], then [B, 1, Tq, Tk] with a key mask
  if (causal) allowed = key_pos <= query_pos;
  if (key_mask.defined()) {
    const at::Tensor real = key_mask.to(device, at::kBool).view({-1, 1, 1, tk});
    allowed = (allowed.defined() ? allowed & real : real) | (key_pos == query_pos);
  }
  return allowed;
}

at::Tensor attention(const at::Tensor& q_in, const at::Tensor& k_in, const at::Tensor& v_in,
                     const AttentionOptions& options) {
  const at::Tensor q = dense_rows(q_in), k = dense_rows(k_in), v = dense_rows(v_in);
  const int64_t tq = q.size(2), tk = k.size(2);
  if (options.causal && tq > tk) {
    throw std::invalid_argument("attention: " + std::to_string(tq) + " causal queries for only " + std::to_string(tk) +
                                " keys");
  }
  const double dropout_p = options.training ? options.dropout_p : 0.0;
  const at::Tensor mask =
      options.mask.defined() ? options.mask : attention_mask(tq, tk, options.causal, options.key_mask, q.device());
  // The fused kernels' own causal mask, where it is the right one.
  const bool fused_causal = !mask.defined() && options.causal && tq == tk && tq > 1;
  return compat::scaled_dot_product_attention(q, k, v, mask, dropout_p, fused_causal);
}

}  // namespace tandem::nn
