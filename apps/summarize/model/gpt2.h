#pragma once
// GPT-2, written as nanoGPT writes it: token and learned position embeddings,
// pre-LayerNorm blocks (causal self-attention, then a GELU MLP), a final
// LayerNorm, and an output head that shares the token embedding's weight.
// Submodules carry Hugging Face's names (transformer.h.0.attn.c_attn...), so
// weights move between the two by name (model/gpt2_hf.h).
#include <torch/nn/module.h>
#include <torch/nn/modules/container/modulelist.h>
#include <torch/nn/modules/dropout.h>
#include <torch/nn/modules/embedding.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/pimpl.h>

#include <cstdint>
#include <string>

#include "model/kv_cache.h"
#include "model/lora.h"
#include "model/weight_copy.h"
#include "tandem/config/settings.h"
#include "tandem/nn/packed_rows.h"
#include "tandem/train/activations.h"

namespace summarize {

struct GPTConfig {
  int64_t n_layer = 12;
  int64_t n_head = 12;
  int64_t n_embd = 768;
  int64_t vocab_size = 50257;
  int64_t block_size = 1024;  // positions 0 .. block_size - 1
  double dropout = 0.0;
  bool bias = true;  // in Linear and LayerNorm layers, as GPT-2 has them
  double layer_norm_epsilon = 1e-5;

  // "gpt2" (124M parameters), "gpt2-medium" (350M), "gpt2-large" (774M),
  // "gpt2-xl" (1.56B), or "tiny" (4 layers of 128, 256 positions: trains on a
  // CPU). Fields set afterwards override the preset's. Throws UsageError
  // listing the presets for any other name.
  static GPTConfig preset(const std::string& name);

  // Throws UsageError when a size is not positive or n_embd is not a multiple
  // of n_head.
  void validate() const;

  // Parameters of the model this config builds, the tied output head counted
  // once; `non_embedding` leaves out the position embeddings, as nanoGPT does.
  int64_t num_parameters(bool non_embedding = false) const;

  // Training FLOPs (forward and backward, three times the forward's) of one
  // sequence of `length` tokens whose output head runs at `predicted`
  // positions: 2 per multiply-add of the blocks' four weight matrices (12c^2
  // per layer and token), of the attention scores and weighted sum over each
  // token's causal prefix (not the padded square), and of the head (vocab x
  // c) where a token is predicted. Lookups, norms, biases and softmax are
  // left out, as in the usual basis of MFU. With the base frozen (LoRA,
  // `trains_base` false) backward makes no weight gradients: twice the
  // forward's, the adapters' few FLOPs left out too.
  double training_flops(int64_t length, int64_t predicted, bool trains_base = true) const;

  // What training keeps for backward (Task::activation_bytes) on sequences of
  // `length` tokens of which `predicted` go through the output head; with
  // the base frozen, without the embedding's gradient.
  tandem::Activations activation_bytes(const tandem::ActivationQuery& query, int64_t length, int64_t predicted,
                                       bool trains_base = true) const;

  // Evaluating without gradients `rows` sequences of `length` tokens whose
  // head runs at `predicted` positions each, computing in query.element_bytes
  // (query.micro_batch is not read): the most the forward holds at once;
  // on the CPU with the weights' copies that few-row products make
  // (model/linear.h).
  int64_t inference_bytes(const tandem::ActivationQuery& query, int64_t rows, int64_t length, int64_t predicted) const;
  // Generating for `batch` prompts at once in a KV cache of `capacity`
  // positions, the prompts up to capacity - `new_tokens` long: the cache,
  // the prompt pass over it, and on the CPU the decoding steps' copies of
  // the weights.
  int64_t generation_bytes(const tandem::ActivationQuery& query, int64_t batch, int64_t capacity,
                           int64_t new_tokens) const;
};

// The model.* keys of the model's shape and start, each declared once; the
// sizes are also written back into the config a model file carries
// (record_shape).
struct ModelKeys {
  std::string preset = "gpt2";
  int64_t n_layer = 0, n_head = 0, n_embd = 0, block_size = 0;
  double dropout = 0.0;
  bool bias = true;
  std::string init_from = "scratch";

  template <class Self, class Visit>
  static void each_key(Self& k, Visit&& visit) {
    using tandem::at_least;
    visit("model.preset", k.preset, "model size",
          tandem::one_of({"tiny", "gpt2", "gpt2-medium", "gpt2-large", "gpt2-xl"}));
    visit("model.n_layer", k.n_layer, "layers; 0: the preset's", at_least(0));
    visit("model.n_head", k.n_head, "attention heads; 0: the preset's", at_least(0));
    visit("model.n_embd", k.n_embd, "embedding width; 0: the preset's", at_least(0));
    visit("model.block_size", k.block_size, "context length; 0: the preset's", at_least(0));
    visit("model.dropout", k.dropout, "dropout in attention, MLP and embeddings", tandem::fraction());
    visit("model.bias", k.bias, "biases in linear layers and layer norms", tandem::any());
    visit("model.init_from", k.init_from,
          "\"scratch\", or \"hf:DIR\" for a Hugging Face GPT-2 (config.json + model.safetensors)", tandem::a_name());
  }
};

// LayerNorm whose bias can be left out (torch::nn::LayerNorm has both affine
// parameters or neither).
class LayerNormImpl : public torch::nn::Module {
 public:
  LayerNormImpl(int64_t size, bool bias, double eps);
  at::Tensor forward(const at::Tensor& x);

  at::Tensor weight, bias;

 private:
  double eps_;
};
TORCH_MODULE(LayerNorm);

class CausalSelfAttentionImpl : public torch::nn::Module {
 public:
  // `layer` picks this block's slot in a KV cache; `fill` false leaves the
  // weights unwritten (GPTImpl's `initialise`).
  CausalSelfAttentionImpl(const GPTConfig& config, int64_t layer, bool fill = true);
  // x [B,T,C] -> [B,T,C]; see GPTImpl::forward for the cache. `mask` is the
  // step's attention mask (tandem::nn::attention_mask), built once for every
  // layer by GPTImpl::features; `rows`, where x packs rows end to end, where
  // each row lies, so that attention runs each row alone (no cache, no mask).
  at::Tensor forward(const at::Tensor& x, KVCache* cache, const at::Tensor& mask,
                     const tandem::nn::PackedRows& rows = {});
  // Adapters on c_attn and c_proj where settings.targets names them, and
  // their merge (model/lora.h).
  void add_lora(const LoraKeys& settings);
  void merge_lora();
  // Into training mode, dropping the weights' copies (model/weight_copy.h).
  void train(bool on = true) override;

  torch::nn::Linear c_attn{nullptr};  // q, k and v of every head at once
  torch::nn::Linear c_proj{nullptr};
  torch::nn::Dropout resid_dropout{nullptr};

 private:
  int64_t n_head_, layer_;
  double dropout_;
  WeightCopy c_attn_packed_, c_proj_packed_;  // for decoding steps of a few rows (model/linear.h)
  LoraAdapter c_attn_lora_, c_proj_lora_;
};
TORCH_MODULE(CausalSelfAttention);

class MLPImpl : public torch::nn::Module {
 public:
  explicit MLPImpl(const GPTConfig& config, bool fill = true);
  at::Tensor forward(const at::Tensor& x);
  // Adapters on c_fc and c_proj where settings.targets names them, and their
  // merge (model/lora.h).
  void add_lora(const LoraKeys& settings);
  void merge_lora();
  // Into training mode, dropping the weights' copies (model/weight_copy.h).
  void train(bool on = true) override;

  torch::nn::Linear c_fc{nullptr}, c_proj{nullptr};
  torch::nn::Dropout dropout{nullptr};

 private:
  WeightCopy c_fc_packed_, c_proj_packed_;  // for decoding steps of a few rows (model/linear.h)
  LoraAdapter c_fc_lora_, c_proj_lora_;
};
TORCH_MODULE(MLP);

class BlockImpl : public torch::nn::Module {
 public:
  BlockImpl(const GPTConfig& config, int64_t layer, bool fill = true);
  at::Tensor forward(const at::Tensor& x, KVCache* cache, const at::Tensor& mask,
                     const tandem::nn::PackedRows& rows = {});

  LayerNorm ln_1{nullptr};
  CausalSelfAttention attn{nullptr};
  LayerNorm ln_2{nullptr};
  MLP mlp{nullptr};
};
TORCH_MODULE(Block);

// The body, registered as "transformer" for Hugging Face's parameter names.
class TransformerImpl : public torch::nn::Module {
 public:
  explicit TransformerImpl(const GPTConfig& config, bool fill = true);

  torch::nn::Embedding wte{nullptr}, wpe{nullptr};
  torch::nn::Dropout drop{nullptr};
  torch::nn::ModuleList h{nullptr};  // Blocks
  LayerNorm ln_f{nullptr};
};
TORCH_MODULE(Transformer);

class GPTImpl : public torch::nn::Module {
 public:
  // Initialised as GPT-2 was: weights of Linear and Embedding layers from
  // N(0, 0.02), residual projections (c_proj) from N(0, 0.02 / sqrt(2 L)),
  // biases zero; from the global generator (torch::manual_seed).
  // `initialise` false allocates the weights and never writes them (their
  // values are whatever the memory held): for a model whose values do not
  // matter (the plan command reads its shapes; a loaded model overwrites
  // them), built in no time whatever its size.
  explicit GPTImpl(const GPTConfig& config, bool initialise = true);

  // Logits [B,T,vocab] for tokens idx [B,T] (int64), all optional beyond that:
  // - cache: the T positions follow the cache's; their keys and values are
  //   added to it. For inference, under torch::NoGradGuard.
  // - positions [B,T] or [1,T]: each token's position; by default the cache's
  //   length, +1, ... (rows left-padded to a common length give each row's
  //   first real token position 0).
  // - key_mask, bool [B, cached + T]: false marks padding, which no real token
  //   attends to.
  // - rows, for rows packed end to end (no cache, no key mask): where each
  //   row lies (nn::packed_rows); a token attends to the earlier tokens of
  //   its own row alone, so with positions restarting at 0 for each row,
  //   each row computes what it would alone.
  // Throws std::invalid_argument past block_size positions.
  at::Tensor forward(const at::Tensor& idx, KVCache* cache = nullptr, const at::Tensor& positions = {},
                     const at::Tensor& key_mask = {}, const tandem::nn::PackedRows& rows = {});
  // The final hidden states [B,T,C]: forward without the head. Generation
  // needs only the last position's logits, which head() gives for a fraction
  // of the memory. Without gradients on the CPU, head() keeps a copy of the
  // embedding (vocab x n_embd floats) for speed: transposed for a single row,
  // packed for 2 to 32 (model/linear.h); so do the blocks' Linear layers for
  // 2 to 32 rows.
  at::Tensor features(const at::Tensor& idx, KVCache* cache = nullptr, const at::Tensor& positions = {},
                      const at::Tensor& key_mask = {}, const tandem::nn::PackedRows& rows = {});
  at::Tensor head(const at::Tensor& features);
  // Into training mode, dropping the copies (model/weight_copy.h).
  void train(bool on = true) override;

  const GPTConfig& config() const { return config_; }

  Transformer transformer{nullptr};

 private:
  GPTConfig config_;
  // head()'s copies of the embedding: transposed for one-row steps, packed
  // for a few rows.
  WeightCopy head_t_, head_packed_;
};
TORCH_MODULE(GPT);

// The loss of next-token prediction, per token: [B,T], float32, where entry t
// is -log p(idx[t] | idx[<t]) from logits[t-1], and entry 0, which nothing
// predicts, is 0. logits [B,T,V], idx [B,T].
at::Tensor next_token_losses(const at::Tensor& logits, const at::Tensor& idx);

// Mean of next_token_losses where loss_mask (bool [B,T]) is true: the mask
// marks the tokens to learn (a summary and its <|endoftext|>, not the prompt
// or padding). loss_mask[:, 0] counts nothing. 0 when nothing is counted.
// The reference, from every position's logits: training's loss is
// SummarizeTask::loss, the same sum with its weight from the head run at the
// summary's positions alone (test_summarize_task checks the two agree); the
// model's tests and bench_gpt2_train use this one.
at::Tensor lm_loss(const at::Tensor& logits, const at::Tensor& idx, const at::Tensor& loss_mask);

}  // namespace summarize
