#include "model/dit.h"

#include <torch/torch.h>

#include <cmath>
#include <map>
#include <stdexcept>
#include <tuple>
#include <utility>

#include "model/pos_embed.h"
#include "tandem/nn/attention.h"
#include "tandem/nn/recompute.h"
#include "tandem/error.h"

namespace vavae {
namespace {

// x * (1 + scale) + shift, per sample over all tokens.
at::Tensor modulate(const at::Tensor& x, const at::Tensor& shift, const at::Tensor& scale) {
  return x * (1 + scale.unsqueeze(1)) + shift.unsqueeze(1);
}

torch::nn::Sequential silu_linear(int64_t in, int64_t out) {
  return torch::nn::Sequential(torch::nn::SiLU(), torch::nn::Linear(in, out));
}

torch::nn::LinearImpl& linear_of(torch::nn::Sequential& silu_then_linear) {
  return silu_then_linear->at<torch::nn::LinearImpl>(1);
}

void zero(torch::nn::LinearImpl& linear) {
  torch::nn::init::zeros_(linear.weight);
  torch::nn::init::zeros_(linear.bias);
}

}  // namespace

DitOptions DitOptions::preset(const std::string& name) {
  // depth, hidden_size, num_heads
  static const std::map<std::string, std::tuple<int64_t, int64_t, int64_t>> kPresets = {
      {"B/1", {12, 768, 12}},
      {"XL/1", {28, 1152, 16}},
      {"tiny", {2, 64, 4}},
  };
  const auto it = kPresets.find(name);
  if (it == kPresets.end()) {
    std::string known;
    for (const auto& preset : kPresets) known += (known.empty() ? "" : ", ") + preset.first;
    throw tandem::UsageError("unknown DiT preset '" + name + "' (known: " + known + ")");
  }
  DitOptions options;
  std::tie(options.depth, options.hidden_size, options.num_heads) = it->second;
  return options;
}

DitOptions DitKeys::options(int64_t input_size, int64_t in_channels, int64_t num_classes) const {
  DitOptions o = DitOptions::preset(preset);
  o.input_size = input_size;
  o.in_channels = in_channels;
  o.num_classes = num_classes;
  o.patch_size = patch_size;
  if (depth > 0) o.depth = depth;
  if (hidden_size > 0) o.hidden_size = hidden_size;
  if (num_heads > 0) o.num_heads = num_heads;
  o.qk_norm = qk_norm;
  o.class_dropout_prob = class_dropout;
  o.validate();
  return o;
}

void DitOptions::validate() const {
  const std::pair<const char*, int64_t> sizes[] = {{"input_size", input_size},
                                                   {"in_channels", in_channels},
                                                   {"patch_size", patch_size},
                                                   {"hidden_size", hidden_size},
                                                   {"depth", depth},
                                                   {"num_heads", num_heads},
                                                   {"num_classes", num_classes}};
  for (const auto& [key, value] : sizes)
    if (value < 1)
      throw tandem::UsageError("DiT config: " + std::string(key) + " must be positive, got " + std::to_string(value));
  if (hidden_size % num_heads != 0 || (hidden_size / num_heads) % 4 != 0) {
    throw tandem::UsageError("DiT config: hidden_size (" + std::to_string(hidden_size) + ") must be num_heads (" +
                             std::to_string(num_heads) + ") heads of a multiple of 4 dims (2D RoPE)");
  }
  if (input_size % patch_size != 0) {
    throw tandem::UsageError("DiT config: input_size (" + std::to_string(input_size) +
                             ") must be a multiple of patch_size (" + std::to_string(patch_size) + ")");
  }
  if (!(mlp_ratio > 0) || mlp_hidden() < 1) throw tandem::UsageError("DiT config: mlp_ratio must be positive");
}

tandem::Activations DitOptions::activation_bytes(const tandem::ActivationQuery& q) const {
  const int64_t c = hidden_size, h = mlp_hidden(), e = q.element_bytes;
  const int64_t tokens = q.micro_batch * grid_size() * grid_size();
  // Per token, what a block's backward reads: its input and the attention
  // branch's residual sum (2c, fp32), each RMSNorm's output and its
  // modulation (4c), q, k, v and RoPE's q and k (5c), attention's output and
  // the projection's (2c), SwiGLU's two halves, its gate's sigmoid (or SiLU)
  // and its product (4h), the MLP projection's output (c); attention's
  // log-sum-exp per head. Counted on the CPU's path; on a GPU under fp16 or
  // bf16 RMSNorm and RoPE keep fp32 copies besides, which this leaves out
  // (not yet measured there). A block under
  // recomputation keeps its input alone, and one block's worth lives again
  // while it runs backward.
  const int64_t block = tokens * (2 * c * 4 + (12 * c + 4 * h) * e + num_heads * 4);
  const int64_t inputs = depth * tokens * c * 4;
  // The patch embedding's input and the final layer's norm, modulation and
  // output.
  const int64_t ends = tokens * (in_channels * patch_size * patch_size * 2 + 3 * c) * e;
  // Evaluating, nothing kept: one block's tensors at a time, and the ends.
  const int64_t evaluation = block + ends;
  const std::string by = "the forward of a micro-batch of " + std::to_string(q.micro_batch) + " latents";
  if (q.recompute) return {inputs + ends, inputs + block, evaluation, by};
  return {depth * block + ends, 0, evaluation, by};
}

TimestepEmbedderImpl::TimestepEmbedderImpl(int64_t hidden_size) {
  mlp = register_module("mlp", torch::nn::Sequential(torch::nn::Linear(kFrequencies, hidden_size), torch::nn::SiLU(),
                                                     torch::nn::Linear(hidden_size, hidden_size)));
}

at::Tensor TimestepEmbedderImpl::frequency_embedding(const at::Tensor& t, int64_t dim) {
  const int64_t half = dim / 2;
  const auto options = t.options().dtype(torch::kFloat);
  const at::Tensor freqs = torch::exp(-std::log(10000.0) * torch::arange(half, options) / static_cast<double>(half));
  const at::Tensor args = t.to(torch::kFloat).unsqueeze(1) * freqs.unsqueeze(0);
  at::Tensor embedding = torch::cat({args.cos(), args.sin()}, -1);
  if (dim % 2 != 0) embedding = torch::cat({embedding, torch::zeros_like(embedding.narrow(1, 0, 1))}, -1);
  return embedding;
}

at::Tensor TimestepEmbedderImpl::forward(const at::Tensor& t) {
  return mlp->forward(frequency_embedding(t, kFrequencies));
}

LabelEmbedderImpl::LabelEmbedderImpl(int64_t num_classes, int64_t hidden_size) {
  embedding_table = register_module("embedding_table", torch::nn::Embedding(num_classes + 1, hidden_size));
}

at::Tensor LabelEmbedderImpl::forward(const at::Tensor& labels) { return embedding_table(labels); }

PatchEmbedImpl::PatchEmbedImpl(int64_t in_channels, int64_t hidden_size, int64_t patch_size) {
  proj = register_module(
      "proj", torch::nn::Conv2d(torch::nn::Conv2dOptions(in_channels, hidden_size, patch_size).stride(patch_size)));
}

at::Tensor PatchEmbedImpl::forward(const at::Tensor& x) { return proj(x).flatten(2).transpose(1, 2); }

DitAttentionImpl::DitAttentionImpl(int64_t hidden_size, int64_t num_heads, bool qk_norm) : num_heads_(num_heads) {
  qkv = register_module("qkv", torch::nn::Linear(hidden_size, 3 * hidden_size));
  if (qk_norm) {
    q_norm = register_module("q_norm", RMSNorm(hidden_size / num_heads));
    k_norm = register_module("k_norm", RMSNorm(hidden_size / num_heads));
  }
  proj = register_module("proj", torch::nn::Linear(hidden_size, hidden_size));
}

at::Tensor DitAttentionImpl::forward(const at::Tensor& x, VisionRope& rope) {
  const int64_t n = x.size(0), tokens = x.size(1), c = x.size(2);
  // [N, T, 3C] -> 3 x [N, heads, T, head_dim]
  const at::Tensor qkv_heads = qkv(x).reshape({n, tokens, 3, num_heads_, c / num_heads_}).permute({2, 0, 3, 1, 4});
  at::Tensor q = qkv_heads[0], k = qkv_heads[1];
  if (q_norm) {
    q = q_norm(q);
    k = k_norm(k);
  }
  q = rope(q);
  k = rope(k);
  tandem::nn::AttentionOptions every_token;  // image tokens see each other both ways
  every_token.causal = false;
  const at::Tensor out = tandem::nn::attention(q, k, qkv_heads[2], every_token);
  return proj(out.transpose(1, 2).reshape({n, tokens, c}));
}

DitBlockImpl::DitBlockImpl(const DitOptions& options) {
  const int64_t hidden = options.hidden_size;
  norm1 = register_module("norm1", RMSNorm(hidden));
  attn = register_module("attn", DitAttention(hidden, options.num_heads, options.qk_norm));
  norm2 = register_module("norm2", RMSNorm(hidden));
  mlp = register_module("mlp", SwiGLU(hidden, options.mlp_hidden()));
  adaLN_modulation = register_module("adaLN_modulation", silu_linear(hidden, 6 * hidden));
}

at::Tensor DitBlockImpl::forward(const at::Tensor& x, const at::Tensor& c, VisionRope& rope) {
  const auto m = adaLN_modulation->forward(c).chunk(6, 1);  // shift, scale, gate: attention, then MLP
  const at::Tensor y = x + m[2].unsqueeze(1) * attn(modulate(norm1(x), m[0], m[1]), rope);
  return y + m[5].unsqueeze(1) * mlp(modulate(norm2(y), m[3], m[4]));
}

FinalLayerImpl::FinalLayerImpl(int64_t hidden_size, int64_t patch_size, int64_t out_channels) {
  norm_final = register_module("norm_final", RMSNorm(hidden_size));
  linear = register_module("linear", torch::nn::Linear(hidden_size, patch_size * patch_size * out_channels));
  adaLN_modulation = register_module("adaLN_modulation", silu_linear(hidden_size, 2 * hidden_size));
}

at::Tensor FinalLayerImpl::forward(const at::Tensor& x, const at::Tensor& c) {
  const auto m = adaLN_modulation->forward(c).chunk(2, 1);
  return linear(modulate(norm_final(x), m[0], m[1]));
}

DitImpl::DitImpl(const DitOptions& options) : options_(options) {
  options.validate();
  const int64_t hidden = options.hidden_size;
  x_embedder = register_module("x_embedder", PatchEmbed(options.in_channels, hidden, options.patch_size));
  t_embedder = register_module("t_embedder", TimestepEmbedder(hidden));
  y_embedder = register_module("y_embedder", LabelEmbedder(options.num_classes, hidden));
  pos_embed = register_buffer("pos_embed", sincos_pos_embed_2d(hidden, options.grid_size()).unsqueeze(0));
  feat_rope = register_module("feat_rope", VisionRope(hidden / options.num_heads, options.grid_size()));
  blocks = register_module("blocks", torch::nn::ModuleList());
  for (int64_t i = 0; i < options.depth; ++i) blocks->push_back(DitBlock(options));
  final_layer = register_module("final_layer", FinalLayer(hidden, options.patch_size, options.in_channels));

  torch::NoGradGuard no_grad;
  for (const auto& module : modules(/*include_self=*/false)) {
    if (auto* linear = module->as<torch::nn::Linear>()) {
      torch::nn::init::xavier_uniform_(linear->weight);
      torch::nn::init::zeros_(linear->bias);
    }
  }
  const at::Tensor& patch_weight = x_embedder->proj->weight;
  torch::nn::init::xavier_uniform_(patch_weight.view({patch_weight.size(0), -1}));
  torch::nn::init::zeros_(x_embedder->proj->bias);
  torch::nn::init::normal_(y_embedder->embedding_table->weight, 0.0, 0.02);
  torch::nn::init::normal_(t_embedder->mlp->at<torch::nn::LinearImpl>(0).weight, 0.0, 0.02);
  torch::nn::init::normal_(t_embedder->mlp->at<torch::nn::LinearImpl>(2).weight, 0.0, 0.02);
  for (const auto& block : *blocks) zero(linear_of(block->as<DitBlock>()->adaLN_modulation));
  zero(linear_of(final_layer->adaLN_modulation));
  zero(*final_layer->linear);
}

at::Tensor DitImpl::forward(const at::Tensor& x, const at::Tensor& t, const at::Tensor& y) {
  const int64_t n = x.size(0);
  if (x.dim() != 4 || x.size(1) != options_.in_channels || x.size(2) != options_.input_size ||
      x.size(3) != options_.input_size) {
    throw std::invalid_argument("DiT: expected latents [N, " + std::to_string(options_.in_channels) + ", " +
                                std::to_string(options_.input_size) + ", " + std::to_string(options_.input_size) +
                                "], got " + c10::str(x.sizes()));
  }
  if (t.dim() != 1 || t.size(0) != n || y.dim() != 1 || y.size(0) != n) {
    throw std::invalid_argument("DiT: t and y must be [N] for N = " + std::to_string(n) + ", got " +
                                c10::str(t.sizes()) + " and " + c10::str(y.sizes()));
  }
  at::Tensor h = x_embedder(x) + pos_embed;
  const at::Tensor c = t_embedder(t) + y_embedder(y);
  for (const auto& block : *blocks) {
    auto* b = block->as<DitBlock>();
    h = tandem::nn::recomputed(*b, [b, rope = feat_rope](const at::Tensor& x, const at::Tensor& cond) mutable { return b->forward(x, cond, rope); }, h, c);
  }
  return unpatchify(final_layer(h, c));
}

at::Tensor DitImpl::unpatchify(const at::Tensor& x) const {
  const int64_t n = x.size(0), grid = options_.grid_size(), p = options_.patch_size, c = options_.in_channels;
  // [N, T, p*p*C] -> [N, h, w, p, q, C] -> [N, C, h, p, w, q] -> [N, C, h*p, w*q]
  return x.reshape({n, grid, grid, p, p, c}).permute({0, 5, 1, 3, 2, 4}).reshape({n, c, grid * p, grid * p});
}

at::Tensor DitImpl::drop_labels(const at::Tensor& y, at::Generator generator) const {
  const at::Tensor draws = at::rand({y.size(0)}, generator, torch::TensorOptions().device(generator.device()));
  return mask_labels(y, (draws < options_.class_dropout_prob).to(y.device()), null_class());
}

at::Tensor mask_labels(const at::Tensor& y, const at::Tensor& mask, int64_t null_class) {
  return torch::where(mask, torch::full_like(y, null_class), y);
}

}  // namespace vavae
