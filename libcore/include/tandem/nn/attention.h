#pragma once
// Multi-head scaled dot-product attention for transformers: causal for
// language models (with a KV cache: the queries are the last positions of the
// keys) or full for image tokens, with padding keys masked out. Fused kernels
// where LibTorch has them (see compat::scaled_dot_product_attention).
#include <ATen/core/Tensor.h>

namespace tandem::nn {

struct AttentionOptions {
  // A query sees only keys at or before its own position. With Tq queries and
  // Tk >= Tq keys, the queries are positions Tk - Tq ... Tk - 1, as when the
  // first Tk - Tq positions come from a KV cache.
  bool causal = true;
  // Optional bool [B, Tk]: false marks keys that are padding (as when prompts
  // of different lengths are left-padded into one batch). A query that would
  // then see no key at all, itself padding, sees its own position instead of
  // turning into NaN, which later layers would spread to every row.
  at::Tensor key_mask;
  double dropout_p = 0.0;  // on the attention weights, only when training
  bool training = false;
  // The mask attention_mask() gives for these Tq, Tk, causal and key_mask,
  // built once by the caller for every layer of a forward pass (a decoding
  // step would otherwise build it again in each layer); used as is.
  at::Tensor mask;
};

// The bool mask, true where a query may see a key, that attention() applies
// with a key mask or a causal mask it cannot leave to the fused kernels:
// [Tq, Tk] causal, or [B, 1, Tq, Tk] with `key_mask`. Undefined when none is
// needed (no key mask, and causal attention the kernels do themselves).
at::Tensor attention_mask(int64_t tq, int64_t tk, bool causal, const at::Tensor& key_mask, const c10::Device& device);

// q [B,H,Tq,D], k and v [B,H,Tk,D] -> [B,H,Tq,D]; scores scaled by 1/sqrt(D).
at::Tensor attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                     const AttentionOptions& options = {});

}  // namespace tandem::nn
