#include "model/gpt2.h"

#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <stdexcept>
#include <tuple>

#include "model/linear.h"
#include "model/row_product.h"
#include "tandem/error.h"
#include "tandem/nn/attention.h"
#include "tandem/nn/recompute.h"

namespace summarize {

namespace F = torch::nn::functional;

namespace {

// The layers of a model whose values do not matter (GPTImpl's `initialise`
// false) hold weights that are allocated and never written: LibTorch's own
// constructors would fill them (kaiming, normal), which for GPT-2 XL's 1.5
// billion values is seconds of CPU and 6 GB of pages touched, for a plan
// that reads their shapes. `set_` keeps the registered parameter and the
// layer's member one tensor.
torch::nn::Linear linear(int64_t in, int64_t out, bool bias, bool fill) {
  if (fill) return torch::nn::Linear(torch::nn::LinearOptions(in, out).bias(bias));
  torch::nn::Linear layer(torch::nn::LinearOptions(1, 1).bias(bias));
  torch::NoGradGuard no_grad;
  layer->options.in_features(in).out_features(out);
  layer->weight.set_(torch::empty({out, in}));
  if (bias) layer->bias.set_(torch::empty({out}));
  return layer;
}

torch::nn::Embedding embedding(int64_t count, int64_t dim, bool fill) {
  if (fill) return torch::nn::Embedding(count, dim);
  torch::nn::Embedding layer(1, 1);
  torch::NoGradGuard no_grad;
  layer->options.num_embeddings(count).embedding_dim(dim);
  layer->weight.set_(torch::empty({count, dim}));
  return layer;
}

// A projection's output: its Linear layer's, plus its adapter's update under LoRA.
at::Tensor project(const at::Tensor& x, const torch::nn::Linear& layer, const LoraAdapter& lora, WeightCopy* packed,
                   bool training) {
  const at::Tensor y = summarize::linear(x, layer->weight, layer->bias, packed);
  return lora.empty() ? y : y + lora.delta(x, training);
}

// The adapter of `target`, on `layer` [in -> out], where settings.targets names it.
LoraAdapter adapter_for(const LoraKeys& settings, const std::string& target, torch::nn::Linear& layer) {
  const auto& targets = settings.targets;
  if (std::find(targets.begin(), targets.end(), target) == targets.end()) return {};
  return LoraAdapter::attach(*layer, layer->weight.size(1), layer->weight.size(0), settings);
}

void merge(torch::nn::Linear& layer, LoraAdapter& lora) {
  if (lora.empty()) return;
  torch::NoGradGuard no_grad;
  layer->weight.add_(lora.weight_delta().to(layer->weight.dtype()));
  layer->unregister_module("lora_A");
  layer->unregister_module("lora_B");
  lora = {};
}

}  // namespace

GPTConfig GPTConfig::preset(const std::string& name) {
  // n_layer, n_head, n_embd; every preset has GPT-2's vocabulary.
  static const std::map<std::string, std::tuple<int64_t, int64_t, int64_t>> kPresets = {
      {"gpt2", {12, 12, 768}},     {"gpt2-medium", {24, 16, 1024}}, {"gpt2-large", {36, 20, 1280}},
      {"gpt2-xl", {48, 25, 1600}}, {"tiny", {4, 4, 128}},
  };
  const auto it = kPresets.find(name);
  if (it == kPresets.end()) {
    std::string known;
    for (const auto& preset : kPresets) known += (known.empty() ? "" : ", ") + preset.first;
    throw tandem::UsageError("unknown GPT-2 preset '" + name + "' (known: " + known + ")");
  }
  GPTConfig config;
  std::tie(config.n_layer, config.n_head, config.n_embd) = it->second;
  if (name == "tiny") config.block_size = 256;
  return config;
}

void GPTConfig::validate() const {
  const std::pair<const char*, int64_t> sizes[] = {{"n_layer", n_layer},
                                                   {"n_head", n_head},
                                                   {"n_embd", n_embd},
                                                   {"vocab_size", vocab_size},
                                                   {"block_size", block_size}};
  for (const auto& [key, value] : sizes)
    if (value < 1)
      throw tandem::UsageError("GPT-2 config: " + std::string(key) + " must be positive, got " + std::to_string(value));
  if (n_embd % n_head != 0) {
    throw tandem::UsageError("GPT-2 config: n_embd (" + std::to_string(n_embd) + ") must be a multiple of n_head (" +
                             std::to_string(n_head) + ")");
  }
  if (dropout < 0 || dropout >= 1)
    throw tandem::UsageError("GPT-2 config: dropout must be in [0, 1), got " + std::to_string(dropout));
}

int64_t GPTConfig::num_parameters(bool non_embedding) const {
  const int64_t c = n_embd, b = bias ? 1 : 0;
  // Two LayerNorms, c_attn (c -> 3c), attention c_proj (c -> c), c_fc (c -> 4c), MLP c_proj (4c -> c).
  const int64_t block =
      2 * (c + b * c) + (3 * c * c + b * 3 * c) + (c * c + b * c) + (4 * c * c + b * 4 * c) + (4 * c * c + b * c);
  const int64_t total = vocab_size * c + block_size * c + n_layer * block + (c + b * c);
  return non_embedding ? total - block_size * c : total;
}

double GPTConfig::training_flops(int64_t length, int64_t predicted, bool trains_base) const {
  const double c = static_cast<double>(n_embd), layers = static_cast<double>(n_layer);
  const double len = static_cast<double>(length);
  const double blocks = 2 * len * layers * 12 * c * c;
  // Token t attends to t + 1 keys: QK^T and the weighted sum of V, c wide each.
  const double attention = layers * 2 * 2 * c * (len * (len + 1) / 2);
  const double head = 2 * static_cast<double>(predicted) * static_cast<double>(vocab_size) * c;
  return (trains_base ? 3 : 2) * (blocks + attention + head);
}

tandem::Activations GPTConfig::activation_bytes(const tandem::ActivationQuery& q, int64_t length, int64_t predicted,
                                                bool trains_base) const {
  const int64_t c = n_embd, e = q.element_bytes, tokens = q.micro_batch * length;
  // Per token, what a block's backward reads: in fp32 the residual stream
  // where each LayerNorm takes it (2c); in the compute dtype the LayerNorms'
  // outputs (2c), q, k and v (3c), attention's output (c), the MLP's input
  // and GELU's (8c); attention's log-sum-exp per head in fp32. A block under
  // recomputation keeps its input alone, and one block's worth lives again
  // while it runs backward.
  const int64_t block = tokens * (2 * c * 4 + 14 * c * e + n_head * 4);
  const int64_t inputs = n_layer * tokens * c * 4;
  // The final LayerNorm's input and the head's input rows; log_softmax's fp32
  // output over the vocabulary at each predicted position, which backward
  // starts by joining with two more of its size (the loss's gradient and its
  // own). At the end, the token embedding's dense gradient (vocab x c)
  // before it is added to the head's, which shares its weight.
  const int64_t rows = q.micro_batch * predicted;
  const int64_t head = tokens * c * 4 + rows * c * e + 3 * rows * vocab_size * 4;
  const int64_t embedding = trains_base ? vocab_size * c * 4 : 0;
  if (q.recompute) return {inputs + head, inputs + block + embedding};
  return {n_layer * block + head, embedding};
}

namespace {

// The weights' copies that model/linear.h makes on the CPU in fp32 for
// products of a few rows, while the model evaluates: every block's four
// matrices for `block_rows` from 2 to kFewRows, the embedding for the head's
// `head_rows` from 1 (transposed for one, packed for more).
int64_t few_row_copies(const GPTConfig& g, const tandem::ActivationQuery& q, int64_t block_rows, int64_t head_rows) {
  if (!q.cpu || q.element_bytes != 4) return 0;
  const int64_t blocks = block_rows >= 2 && block_rows <= kFewRows ? g.n_layer * 12 * g.n_embd * g.n_embd * 4 : 0;
  const int64_t head = head_rows >= 1 && head_rows <= kFewRows ? g.vocab_size * g.n_embd * 4 : 0;
  return blocks + head;
}

}  // namespace

int64_t GPTConfig::inference_bytes(const tandem::ActivationQuery& q, int64_t rows, int64_t length,
                                   int64_t predicted) const {
  const int64_t c = n_embd, e = q.element_bytes, tokens = rows * length;
  // In a block: the fp32 residual stream and the sum the block adds to it
  // (2c), and, in the compute dtype, a LayerNorm's output beside q, k and
  // v (4c) or the MLP's input and its GELU (c + 8c): nothing is kept for
  // backward, so one block's worth at a time. Attention runs fused (no
  // scores held).
  const int64_t block = tokens * (2 * c * 4 + 9 * c * e);
  // At the head: the final LayerNorm's output (fp32), the predicted rows'
  // inputs, their logits, and the loss's fp32 copy of them and log-softmax.
  const int64_t picked = rows * predicted;
  const int64_t head = tokens * c * 4 + picked * c * e + picked * vocab_size * (e + (e == 4 ? 0 : 4) + 4);
  return std::max(block, head) + few_row_copies(*this, q, tokens, picked);
}

int64_t GPTConfig::generation_bytes(const tandem::ActivationQuery& q, int64_t batch, int64_t capacity,
                                    int64_t new_tokens) const {
  // Keys and values of every layer, allocated whole on the first step.
  const int64_t cache = 2 * n_layer * batch * capacity * n_embd * q.element_bytes;
  // The prompt pass, the head at each prompt's last position alone; the
  // steps' products of `batch` rows, whose copies of the weights on the CPU
  // an inference command keeps from one batch to the next.
  return cache + inference_bytes(q, batch, capacity - new_tokens, 1) + few_row_copies(*this, q, batch, 0);
}

LayerNormImpl::LayerNormImpl(int64_t size, bool bias, double eps) : eps_(eps) {
  weight = register_parameter("weight", torch::ones({size}));
  if (bias) this->bias = register_parameter("bias", torch::zeros({size}));
}

at::Tensor LayerNormImpl::forward(const at::Tensor& x) {
  return F::layer_norm(x, F::LayerNormFuncOptions({weight.size(0)}).weight(weight).bias(bias).eps(eps_));
}

CausalSelfAttentionImpl::CausalSelfAttentionImpl(const GPTConfig& config, int64_t layer, bool fill)
    : n_head_(config.n_head), layer_(layer), dropout_(config.dropout) {
  const int64_t c = config.n_embd;
  c_attn = register_module("c_attn", linear(c, 3 * c, config.bias, fill));
  c_proj = register_module("c_proj", linear(c, c, config.bias, fill));
  resid_dropout = register_module("resid_dropout", torch::nn::Dropout(config.dropout));
}

at::Tensor CausalSelfAttentionImpl::forward(const at::Tensor& x, KVCache* cache, const at::Tensor& mask,
                                            const tandem::nn::PackedRows& rows) {
  const int64_t c = x.size(2);
  tandem::nn::AttentionOptions options;
  options.mask = mask;
  options.dropout_p = dropout_;
  options.training = is_training();
  // qkv [b, t, 3c] -> [b, t, c]
  const auto attend = [&](const at::Tensor& qkv) {
    const int64_t b = qkv.size(0), t = qkv.size(1);
    const auto heads = [&](const at::Tensor& y) { return y.view({b, t, n_head_, c / n_head_}).transpose(1, 2); };
    const std::vector<at::Tensor> parts = qkv.split(c, 2);
    at::Tensor q = heads(parts[0]), k = heads(parts[1]), v = heads(parts[2]);
    if (cache != nullptr) std::tie(k, v) = cache->append(layer_, k, v);
    return tandem::nn::attention(q, k, v, options).transpose(1, 2).reshape({b, t, c});
  };
  const at::Tensor qkv = project(x, c_attn, c_attn_lora_, &c_attn_packed_, is_training());
  at::Tensor y;
  if (!rows.defined()) {
    y = attend(qkv);
  } else {
    std::vector<at::Tensor> ys;
    for (const at::Tensor& bucket : tandem::nn::to_rows(qkv, rows)) ys.push_back(attend(bucket));
    y = tandem::nn::from_rows(ys, rows);
  }
  return resid_dropout(project(y, c_proj, c_proj_lora_, &c_proj_packed_, is_training()));
}

void CausalSelfAttentionImpl::train(bool on) {
  torch::nn::Module::train(on);
  if (!on) return;
  c_attn_packed_.clear();
  c_proj_packed_.clear();
}

void CausalSelfAttentionImpl::add_lora(const LoraKeys& settings) {
  c_attn_lora_ = adapter_for(settings, "attn.c_attn", c_attn);
  c_proj_lora_ = adapter_for(settings, "attn.c_proj", c_proj);
}

void CausalSelfAttentionImpl::merge_lora() {
  merge(c_attn, c_attn_lora_);
  merge(c_proj, c_proj_lora_);
}

MLPImpl::MLPImpl(const GPTConfig& config, bool fill) {
  const int64_t c = config.n_embd;
  c_fc = register_module("c_fc", linear(c, 4 * c, config.bias, fill));
  c_proj = register_module("c_proj", linear(4 * c, c, config.bias, fill));
  dropout = register_module("dropout", torch::nn::Dropout(config.dropout));
}

at::Tensor MLPImpl::forward(const at::Tensor& x) {
  // GPT-2's GELU is the tanh approximation ("gelu_new" in transformers).
  const at::Tensor hidden = torch::gelu(project(x, c_fc, c_fc_lora_, &c_fc_packed_, is_training()), "tanh");
  return dropout(project(hidden, c_proj, c_proj_lora_, &c_proj_packed_, is_training()));
}

void MLPImpl::train(bool on) {
  torch::nn::Module::train(on);
  if (!on) return;
  c_fc_packed_.clear();
  c_proj_packed_.clear();
}

void MLPImpl::add_lora(const LoraKeys& settings) {
  c_fc_lora_ = adapter_for(settings, "mlp.c_fc", c_fc);
  c_proj_lora_ = adapter_for(settings, "mlp.c_proj", c_proj);
}

void MLPImpl::merge_lora() {
  merge(c_fc, c_fc_lora_);
  merge(c_proj, c_proj_lora_);
}

BlockImpl::BlockImpl(const GPTConfig& config, int64_t layer, bool fill) {
  ln_1 = register_module("ln_1", LayerNorm(config.n_embd, config.bias, config.layer_norm_epsilon));
  attn = register_module("attn", CausalSelfAttention(config, layer, fill));
  ln_2 = register_module("ln_2", LayerNorm(config.n_embd, config.bias, config.layer_norm_epsilon));
  mlp = register_module("mlp", MLP(config, fill));
}

at::Tensor BlockImpl::forward(const at::Tensor& x, KVCache* cache, const at::Tensor& mask,
                              const tandem::nn::PackedRows& rows) {
  const at::Tensor y = x + attn(ln_1(x), cache, mask, rows);
  return y + mlp(ln_2(y));
}

TransformerImpl::TransformerImpl(const GPTConfig& config, bool fill) {
  wte = register_module("wte", embedding(config.vocab_size, config.n_embd, fill));
  wpe = register_module("wpe", embedding(config.block_size, config.n_embd, fill));
  drop = register_module("drop", torch::nn::Dropout(config.dropout));
  h = register_module("h", torch::nn::ModuleList());
  for (int64_t layer = 0; layer < config.n_layer; ++layer) h->push_back(Block(config, layer, fill));
  ln_f = register_module("ln_f", LayerNorm(config.n_embd, config.bias, config.layer_norm_epsilon));
}

GPTImpl::GPTImpl(const GPTConfig& config, bool initialise) : config_(config) {
  config.validate();
  transformer = register_module("transformer", Transformer(config, initialise));
  if (!initialise) return;

  torch::NoGradGuard no_grad;
  for (const auto& module : modules(/*include_self=*/false)) {
    if (auto* linear = module->as<torch::nn::Linear>()) {
      torch::nn::init::normal_(linear->weight, 0.0, 0.02);
      if (linear->bias.defined()) torch::nn::init::zeros_(linear->bias);
    } else if (auto* embedding = module->as<torch::nn::Embedding>()) {
      torch::nn::init::normal_(embedding->weight, 0.0, 0.02);
    }
  }
  // Each block adds its two projections to the residual stream: scaled down
  // so that the stream's variance does not grow with depth.
  const double residual_std = 0.02 / std::sqrt(2.0 * static_cast<double>(config.n_layer));
  for (auto& block : *transformer->h) {
    torch::nn::init::normal_(block->as<Block>()->attn->c_proj->weight, 0.0, residual_std);
    torch::nn::init::normal_(block->as<Block>()->mlp->c_proj->weight, 0.0, residual_std);
  }
}

at::Tensor GPTImpl::features(const at::Tensor& idx, KVCache* cache, const at::Tensor& positions,
                             const at::Tensor& key_mask, const tandem::nn::PackedRows& rows) {
  const int64_t past = cache != nullptr ? cache->length() : 0, t = idx.size(1);
  if (past + t > config_.block_size) {
    throw std::invalid_argument("GPT: " + std::to_string(past + t) + " positions exceed block_size " +
                                std::to_string(config_.block_size));
  }
  const at::Tensor pos =
      positions.defined() ? positions : torch::arange(past, past + t, idx.options().dtype(torch::kLong)).unsqueeze(0);
  at::Tensor x = transformer->drop(transformer->wte(idx) + transformer->wpe(pos));
  // A frozen base keeps its embeddings in half precision (LoRA: Task::frozen_base): the residual stream
  // stays fp32 as with fp32 weights, and, since no gradient reaches them, the first block's input is made
  // to ask for one, or recomputation (which needs an input that does) would pass the first block by.
  if (x.scalar_type() != torch::kFloat) x = x.to(torch::kFloat);
  if (torch::GradMode::is_enabled() && !x.requires_grad()) x.requires_grad_();
  if (rows.defined() && (cache != nullptr || key_mask.defined()))
    throw std::invalid_argument("GPT: packed rows take neither a KV cache nor a key mask");
  const at::Tensor mask =
      rows.defined() ? at::Tensor() : tandem::nn::attention_mask(t, past + t, /*causal=*/true, key_mask, idx.device());
  for (auto& block : *transformer->h) {
    auto* b = block->as<Block>();
    if (cache != nullptr) {
      x = b->forward(x, cache, mask);
      continue;
    }
    x = tandem::nn::recomputed(
        *b, [b, mask, rows](const at::Tensor& h, const at::Tensor&) { return b->forward(h, nullptr, mask, rows); }, x);
  }
  return transformer->ln_f(x);
}

void GPTImpl::train(bool on) {
  torch::nn::Module::train(on);
  if (!on) return;
  head_t_.clear();
  head_packed_.clear();
}

at::Tensor GPTImpl::head(const at::Tensor& features) {
  const at::Tensor& weight = transformer->wte->weight;
  const int64_t c = weight.size(1);
  if (torch::GradMode::is_enabled() || !features.device().is_cpu() || features.numel() != c ||
      weight.scalar_type() != at::kFloat || features.scalar_type() != at::kFloat)
    return summarize::linear(features, weight, {}, &head_packed_);
  // One row (batch-1 generation): without tandem's own loop, MKL's
  // matrix-vector product runs over a transposed copy of the embedding much
  // faster than over the embedding itself (tiny: 1.3 ms against 4.3 a token;
  // GPT-2: 9.4 against 13.4).
  std::vector<int64_t> shape = features.sizes().vec();
  shape.back() = weight.size(0);
  if (row_product_reads_weights_as_stored()) return row_product(features.reshape({1, c}), weight.t()).view(shape);
  const at::Tensor& transposed = head_t_.get(weight, [](const at::Tensor& w) { return w.t().contiguous(); });
  return row_product(features.reshape({1, c}), transposed).view(shape);
}

at::Tensor GPTImpl::forward(const at::Tensor& idx, KVCache* cache, const at::Tensor& positions,
                            const at::Tensor& key_mask, const tandem::nn::PackedRows& rows) {
  return head(features(idx, cache, positions, key_mask, rows));
}

at::Tensor next_token_losses(const at::Tensor& logits, const at::Tensor& idx) {
  const int64_t b = idx.size(0), t = idx.size(1), v = logits.size(2);
  const at::Tensor predicted =
      F::cross_entropy(logits.narrow(1, 0, t - 1).to(torch::kFloat).reshape({-1, v}),
                       idx.narrow(1, 1, t - 1).reshape({-1}), F::CrossEntropyFuncOptions().reduction(torch::kNone));
  return F::pad(predicted.view({b, t - 1}), F::PadFuncOptions({1, 0}));
}

at::Tensor lm_loss(const at::Tensor& logits, const at::Tensor& idx, const at::Tensor& loss_mask) {
  const int64_t t = idx.size(1);
  const at::Tensor counted = loss_mask.narrow(1, 1, t - 1).to(logits.device(), torch::kFloat);
  return (next_token_losses(logits, idx).narrow(1, 1, t - 1) * counted).sum() / counted.sum().clamp_min(1);
}

}  // namespace summarize
