#pragma once
// LightningDiT, the class-conditional diffusion transformer that models the
// VAE's latents: patch tokens with a fixed sin-cos position embedding, blocks
// of self-attention (2D RoPE on q and k, optional qk-norm) and a SwiGLU MLP
// under RMSNorm, each modulated by adaLN-Zero from the timestep and label
// embeddings, and a modulated final projection back to patches. The output is
// a velocity, with the input's channels (no learned sigma). Submodules carry
// the upstream names (blocks.0.attn.qkv.weight ...), so weights move by name;
// unlike upstream, pos_embed is a buffer rather than a frozen parameter.
#include <ATen/core/Generator.h>
#include <torch/nn/module.h>
#include <torch/nn/modules/container/modulelist.h>
#include <torch/nn/modules/container/sequential.h>
#include <torch/nn/modules/conv.h>
#include <torch/nn/modules/embedding.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/pimpl.h>

#include <cstdint>
#include <string>

#include "model/rope.h"
#include "model/norm_mlp.h"
#include "tandem/config/settings.h"
#include "tandem/train/activations.h"

namespace vavae {

struct DitOptions {
  int64_t input_size = 16;   // latent height = width (set from the latents)
  int64_t in_channels = 32;  // latent channels (set from the latents)
  int64_t patch_size = 1;
  int64_t hidden_size = 768;
  int64_t depth = 12;
  int64_t num_heads = 12;
  double mlp_ratio = 4.0;           // SwiGLU hidden width: int(2/3 * mlp_ratio * hidden_size)
  int64_t num_classes = 1000;       // set from the data; the label table has one more row, the null class
  double class_dropout_prob = 0.1;  // see DitImpl::drop_labels
  bool qk_norm = false;             // RMSNorm over each head's q and k (LightningDiT's released config: off)

  // "B/1" (depth 12, hidden 768, 12 heads), "XL/1" (28, 1152, 16), patch 1,
  // or "tiny" (2, 64, 4 heads of 16, patch 1: trains on a CPU). Fields set
  // afterwards override the preset's (patch_size = 2 makes B/2 ...). Throws
  // UsageError listing the presets for any other name.
  static DitOptions preset(const std::string& name);

  // Throws UsageError naming the field: sizes not positive (a preset's merged
  // with the keys', or the data's), hidden_size not a multiple of num_heads,
  // a head width not a multiple of 4 (RoPE turns pairs in two halves),
  // input_size not a multiple of patch_size. The label dropout's range is
  // dit.class_dropout's (DitKeys).
  void validate() const;

  int64_t grid_size() const { return input_size / patch_size; }
  // What training keeps for backward (Task::activation_bytes), and what
  // evaluating holds at once.
  tandem::Activations activation_bytes(const tandem::ActivationQuery& query) const;

  int64_t mlp_hidden() const { return static_cast<int64_t>(2.0 / 3.0 * static_cast<double>(hidden_size) * mlp_ratio); }
};

// The job's [dit] keys, each declared once (tandem/config/settings.h): the
// model's size over a preset, where a size of 0 keeps the preset's, and how
// it trains. A new key is a field and a line of each_key here, its use in
// options() or the task, and its test.
struct DitKeys {
  std::string preset = "B/1";
  int64_t patch_size = 1, depth = 0, hidden_size = 0, num_heads = 0;
  bool qk_norm = false;
  double class_dropout = 0.1;
  std::string timestep_sampling = "lognormal";
  double cosine_weight = 0.0;
  std::string best_metric = "eval_loss";

  template <class Self, class Visit>
  static void each_key(Self& k, Visit&& visit) {
    visit("dit.preset", k.preset, "DiT size: B/1, XL/1, or tiny (CPU)", tandem::one_of({"B/1", "XL/1", "tiny"}));
    visit("dit.patch_size", k.patch_size, "latent pixels per token side", tandem::at_least(1));
    visit("dit.depth", k.depth, "transformer blocks; 0: the preset's", tandem::at_least(0));
    visit("dit.hidden_size", k.hidden_size, "token width; 0: the preset's", tandem::at_least(0));
    visit("dit.num_heads", k.num_heads, "attention heads; 0: the preset's", tandem::at_least(0));
    visit("dit.qk_norm", k.qk_norm, "RMSNorm over each head's q and k", tandem::any());
    visit("dit.class_dropout", k.class_dropout,
          "probability that a training label becomes the null class (for guidance)", tandem::fraction());
    visit("dit.timestep_sampling", k.timestep_sampling, "training timesteps: uniform, or sigmoid(N(0, 1))",
          tandem::one_of({"uniform", "lognormal"}));
    visit("dit.cosine_weight", k.cosine_weight, "weight of the velocity-direction (cosine) loss added to the MSE",
          tandem::at_least(0));
    visit("dit.best_metric", k.best_metric,
          "train-dit: the metric that picks models/best_model.h5 (and early stopping): the validation flow loss, or a "
          "figure of eval.samples_per_user images per user sampled at each evaluation: the share evaluate's judge "
          "(trained first) recognises, or, with eval.inception_weights, KID, FID (more than 2048 images a side), "
          "precision or recall against the real training images",
          tandem::one_of({"eval_loss", "eval_conditional_accuracy", "eval_kid_mean", "eval_fid", "eval_precision",
                          "eval_recall"}));
  }

  // The DiT these keys describe for square latents of `input_size` pixels
  // and `in_channels` channels, labelled with `num_classes` classes. Throws
  // UsageError (DitOptions::validate) for sizes the DiT cannot take.
  DitOptions options(int64_t input_size, int64_t in_channels, int64_t num_classes) const;
};

// Timesteps [N] -> [N, hidden]: DiT's sinusoidal embedding of 256 frequencies
// (cos half, then sin half; max period 10000), then Linear -> SiLU -> Linear.
// t goes in as given, in [0, 1] for rectified flow, unscaled, as LightningDiT
// feeds it (DiT's 0..999 steps span more of the frequencies; a model trained
// either way works, and matching upstream keeps its checkpoints usable).
class TimestepEmbedderImpl : public torch::nn::Module {
 public:
  static constexpr int64_t kFrequencies = 256;

  explicit TimestepEmbedderImpl(int64_t hidden_size);
  at::Tensor forward(const at::Tensor& t);

  // [N, dim]: cos(t f_k) for k < dim/2, then sin(t f_k), f_k = 10000^(-k / (dim/2)).
  static at::Tensor frequency_embedding(const at::Tensor& t, int64_t dim);

  torch::nn::Sequential mlp{nullptr};  // mlp.0, mlp.2: Linear layers
};
TORCH_MODULE(TimestepEmbedder);

class LabelEmbedderImpl : public torch::nn::Module {
 public:
  LabelEmbedderImpl(int64_t num_classes, int64_t hidden_size);
  // Labels [N] int64 in [0, num_classes]; num_classes is the null class.
  at::Tensor forward(const at::Tensor& labels);

  torch::nn::Embedding embedding_table{nullptr};  // num_classes + 1 rows
};
TORCH_MODULE(LabelEmbedder);

// A conv with kernel = stride = patch, flattened to tokens [N, T, hidden].
class PatchEmbedImpl : public torch::nn::Module {
 public:
  PatchEmbedImpl(int64_t in_channels, int64_t hidden_size, int64_t patch_size);
  at::Tensor forward(const at::Tensor& x);

  torch::nn::Conv2d proj{nullptr};
};
TORCH_MODULE(PatchEmbed);

class DitAttentionImpl : public torch::nn::Module {
 public:
  DitAttentionImpl(int64_t hidden_size, int64_t num_heads, bool qk_norm);
  // x [N, T, hidden]; `rope` turns q and k.
  at::Tensor forward(const at::Tensor& x, VisionRope& rope);

  torch::nn::Linear qkv{nullptr};            // with bias
  RMSNorm q_norm{nullptr}, k_norm{nullptr};  // only with qk_norm
  torch::nn::Linear proj{nullptr};

 private:
  int64_t num_heads_;
};
TORCH_MODULE(DitAttention);

class DitBlockImpl : public torch::nn::Module {
 public:
  explicit DitBlockImpl(const DitOptions& options);
  // x [N, T, hidden], c [N, hidden] (timestep + label).
  at::Tensor forward(const at::Tensor& x, const at::Tensor& c, VisionRope& rope);

  RMSNorm norm1{nullptr};
  DitAttention attn{nullptr};
  RMSNorm norm2{nullptr};
  SwiGLU mlp{nullptr};
  // SiLU -> Linear(hidden, 6 hidden): shift, scale, gate for attention, then for the MLP.
  torch::nn::Sequential adaLN_modulation{nullptr};
};
TORCH_MODULE(DitBlock);

class FinalLayerImpl : public torch::nn::Module {
 public:
  FinalLayerImpl(int64_t hidden_size, int64_t patch_size, int64_t out_channels);
  // [N, T, hidden] -> [N, T, patch^2 * out_channels].
  at::Tensor forward(const at::Tensor& x, const at::Tensor& c);

  RMSNorm norm_final{nullptr};
  torch::nn::Linear linear{nullptr};
  torch::nn::Sequential adaLN_modulation{nullptr};  // SiLU -> Linear(hidden, 2 hidden): shift, scale
};
TORCH_MODULE(FinalLayer);

class DitImpl : public torch::nn::Module {
 public:
  // Initialised as LightningDiT is, from the global generator: xavier-uniform
  // Linear weights with zero biases, the patch conv as a Linear over its
  // flattened weight, label table and timestep MLP weights from N(0, 0.02),
  // and zeros in every adaLN_modulation and in final_layer.linear, so that a
  // fresh model outputs exactly zero.
  explicit DitImpl(const DitOptions& options);

  // x [N, in_channels, input_size, input_size], t [N] in [0, 1] (0: noise,
  // 1: data), y [N] int64 in [0, num_classes] -> velocity, x's shape. Labels
  // are used as given: dropout for guidance is drop_labels', applied by the
  // trainer, so evaluation and sampling can never drop by accident.
  at::Tensor forward(const at::Tensor& x, const at::Tensor& t, const at::Tensor& y);

  // Labels with each replaced by the null class (num_classes) with
  // probability class_dropout_prob, drawn from `generator` on its device.
  at::Tensor drop_labels(const at::Tensor& y, at::Generator generator) const;

  const DitOptions& options() const { return options_; }
  int64_t null_class() const { return options_.num_classes; }

  PatchEmbed x_embedder{nullptr};
  TimestepEmbedder t_embedder{nullptr};
  LabelEmbedder y_embedder{nullptr};
  at::Tensor pos_embed;  // buffer [1, T, hidden]
  VisionRope feat_rope{nullptr};
  torch::nn::ModuleList blocks{nullptr};  // DitBlocks
  FinalLayer final_layer{nullptr};

 private:
  at::Tensor unpatchify(const at::Tensor& x) const;

  DitOptions options_;
};
TORCH_MODULE(Dit);

// Labels with the entries where `mask` (bool [N]) is true replaced by null_class.
at::Tensor mask_labels(const at::Tensor& y, const at::Tensor& mask, int64_t null_class);

}  // namespace vavae
