#pragma once
// The KL-regularised autoencoder of Latent Diffusion (AutoencoderKL), as
// VA-VAE f16d32 uses it: images [N,3,H,W] in [-1, 1] to latents
// [N, embed_dim, H/f, W/f] and back, f = 2^(levels - 1). Submodules carry the
// upstream names (encoder.down.0.block.0.conv1.weight ...), so a converted
// official checkpoint loads by name, and writing named_parameters() with
// tandem::write_safetensors is the export: nothing is renamed either way.
// Upstream checkpoints also hold loss.* and foundation_model.* / linear_proj.*
// tensors, which belong to training and are not part of this module.
#include <torch/nn/module.h>
#include <torch/nn/modules/container/modulelist.h>
#include <torch/nn/modules/conv.h>
#include <torch/nn/modules/dropout.h>
#include <torch/nn/modules/normalization.h>
#include <torch/nn/pimpl.h>

#include <cstdint>
#include <string>
#include <vector>

#include "model/posterior.h"
#include "tandem/train/activations.h"

namespace vavae {

struct VaeOptions {
  int64_t in_channels = 3;
  int64_t out_ch = 3;
  // The nominal input size: with attn_resolutions it decides which levels get
  // attention (a level's resolution is resolution / 2^level), as upstream's
  // config does. Inputs of other sizes run through the same modules.
  int64_t resolution = 256;
  int64_t ch = 128;
  std::vector<int64_t> ch_mult = {1, 1, 2, 2, 4};
  int64_t num_res_blocks = 2;  // per encoder level; the decoder has one more
  std::vector<int64_t> attn_resolutions = {16};
  int64_t z_channels = 32;  // the encoder gives 2 * z_channels (double_z, always on for the KL model)
  int64_t embed_dim = 32;   // latent channels
  double dropout = 0.0;
  // GroupNorm groups (upstream: 32). Must divide every normalised width,
  // ch * ch_mult[i]: with the default 32, ch must be a multiple of 32.
  int64_t norm_groups = 32;

  // "f16d32": VA-VAE's tokenizer (256x256 -> 32x16x16).
  // "tiny": for 32x32 CPU images: ch 32, ch_mult {1, 2, 2}, one ResBlock per
  // level, attention at the lowest level (8x8), z_channels = embed_dim = 4,
  // 32x32 -> 4x8x8 (f4, as Stable Diffusion's 4 latent channels: 12x fewer
  // numbers than pixels, which a small DiT models on a CPU).
  // Throws UsageError listing the presets for any other name.
  static VaeOptions preset(const std::string& name);

  // Throws UsageError naming the field: sizes not positive, an empty ch_mult,
  // norm_groups not dividing a width, dropout outside [0, 1).
  void validate() const;

  // f: how much smaller the latents are than the image on each side.
  int64_t downsample_factor() const;

  // What training (vae_training_loss without the VF terms) keeps for
  // backward on images of `image_size` pixels (Task::activation_bytes), and
  // what evaluating them holds at once.
  tandem::Activations activation_bytes(const tandem::ActivationQuery& query, int64_t image_size) const;
};

// GroupNorm -> SiLU -> conv 3x3, twice, plus the input (through a 1x1
// nin_shortcut when the widths differ). LDM's ResnetBlock without the
// timestep input.
class ResnetBlockImpl : public torch::nn::Module {
 public:
  ResnetBlockImpl(int64_t in_channels, int64_t out_channels, int64_t groups, double dropout);
  at::Tensor forward(const at::Tensor& x);

  torch::nn::GroupNorm norm1{nullptr}, norm2{nullptr};
  torch::nn::Conv2d conv1{nullptr}, conv2{nullptr};
  torch::nn::Dropout dropout{nullptr};
  torch::nn::Conv2d nin_shortcut{nullptr};  // only when in_channels != out_channels
};
TORCH_MODULE(ResnetBlock);

// Single-head self-attention over the spatial positions, 1x1 convs for q, k,
// v and the output, added to the input.
class AttnBlockImpl : public torch::nn::Module {
 public:
  AttnBlockImpl(int64_t channels, int64_t groups);
  at::Tensor forward(const at::Tensor& x);

  torch::nn::GroupNorm norm{nullptr};
  torch::nn::Conv2d q{nullptr}, k{nullptr}, v{nullptr}, proj_out{nullptr};
};
TORCH_MODULE(AttnBlock);

// Halves the size: zero padding on the right and bottom only, then a 3x3
// stride-2 conv without padding (LDM's asymmetric padding).
class DownsampleImpl : public torch::nn::Module {
 public:
  explicit DownsampleImpl(int64_t channels);
  at::Tensor forward(const at::Tensor& x);

  torch::nn::Conv2d conv{nullptr};
};
TORCH_MODULE(Downsample);

// Doubles the size: nearest-neighbour x2, then a 3x3 conv.
class UpsampleImpl : public torch::nn::Module {
 public:
  explicit UpsampleImpl(int64_t channels);
  at::Tensor forward(const at::Tensor& x);

  torch::nn::Conv2d conv{nullptr};
};
TORCH_MODULE(Upsample);

// One resolution level: ResBlocks, each followed by an attention block where
// the level has attention, then the resampler, if any. Registered as
// encoder.down.{i} / decoder.up.{i}.
enum class Resample { kNone, kDown, kUp };

class LevelImpl : public torch::nn::Module {
 public:
  LevelImpl(int64_t in_channels, int64_t out_channels, int64_t num_blocks, bool attention, Resample resample,
            int64_t groups, double dropout);
  at::Tensor forward(const at::Tensor& x);

  torch::nn::ModuleList block{nullptr};  // ResnetBlocks
  torch::nn::ModuleList attn{nullptr};   // AttnBlocks: one per ResBlock, or none
  Downsample downsample{nullptr};
  Upsample upsample{nullptr};
};
TORCH_MODULE(Level);

// block_1 -> attn_1 -> block_2 at the lowest resolution.
class MidImpl : public torch::nn::Module {
 public:
  MidImpl(int64_t channels, int64_t groups, double dropout);
  at::Tensor forward(const at::Tensor& x);

  ResnetBlock block_1{nullptr};
  AttnBlock attn_1{nullptr};
  ResnetBlock block_2{nullptr};
};
TORCH_MODULE(Mid);

class EncoderImpl : public torch::nn::Module {
 public:
  explicit EncoderImpl(const VaeOptions& options);
  // [N, in_channels, H, W] -> moments [N, 2 * z_channels, H/f, W/f].
  at::Tensor forward(const at::Tensor& x);

  torch::nn::Conv2d conv_in{nullptr};
  torch::nn::ModuleList down{nullptr};  // Levels, highest resolution first
  Mid mid{nullptr};
  torch::nn::GroupNorm norm_out{nullptr};
  torch::nn::Conv2d conv_out{nullptr};
};
TORCH_MODULE(Encoder);

// The weights of `model` (a VAE, or a model holding one) that run in fp32
// under any autocast, by name: each encoder's conv_out (EncoderImpl::forward)
// and a VF-VAE's linear_proj (the VF loss's path, vae_training_loss).
// Task::fp32_weights.
std::vector<std::string> fp32_weights(torch::nn::Module& model);

class DecoderImpl : public torch::nn::Module {
 public:
  explicit DecoderImpl(const VaeOptions& options);
  // [N, z_channels, h, w] -> [N, out_ch, h * f, w * f].
  at::Tensor forward(const at::Tensor& z);

  torch::nn::Conv2d conv_in{nullptr};
  Mid mid{nullptr};
  // Levels indexed by resolution as in the encoder (up.0 is the full size),
  // so they run from the last to up.0, as upstream's insert(0) builds them.
  torch::nn::ModuleList up{nullptr};
  torch::nn::GroupNorm norm_out{nullptr};
  torch::nn::Conv2d conv_out{nullptr};
};
TORCH_MODULE(Decoder);

struct VaeOutput {
  at::Tensor reconstruction;  // [N, out_ch, H, W]
  Posterior posterior;
  at::Tensor latents;  // the sample that was decoded, [N, embed_dim, h, w]
};

class VaeImpl : public torch::nn::Module {
 public:
  // Initialised as torch initialises Conv2d and GroupNorm, from the global
  // generator: training starts from there, or the weights are loaded.
  explicit VaeImpl(const VaeOptions& options);

  // x [N, in_channels, H, W], H and W multiples of f.
  Posterior encode(const at::Tensor& x);
  // z [N, embed_dim, h, w] -> [N, out_ch, h * f, w * f].
  at::Tensor decode(const at::Tensor& z);

  // Encode, sample the posterior with `noise` (standard normal of the
  // latents' shape), decode.
  VaeOutput forward(const at::Tensor& x, const at::Tensor& noise);
  // The same with the noise drawn from `generator` (see Posterior::sample).
  VaeOutput forward(const at::Tensor& x, at::Generator generator);

  // The weight the adaptive loss weights are taken against: the decoder's
  // last conv for the reconstruction, the encoder's for the latents.
  const at::Tensor& decoder_last_layer() const { return decoder->conv_out->weight; }
  const at::Tensor& encoder_last_layer() const { return encoder->conv_out->weight; }

  const VaeOptions& options() const { return options_; }

  Encoder encoder{nullptr};
  Decoder decoder{nullptr};
  torch::nn::Conv2d quant_conv{nullptr};       // 1x1, 2 * z_channels -> 2 * embed_dim
  torch::nn::Conv2d post_quant_conv{nullptr};  // 1x1, embed_dim -> z_channels

 private:
  VaeOptions options_;
};
TORCH_MODULE(Vae);

// The VAE as VA-VAE trains it: the VAE plus linear_proj, a 1x1 convolution
// without bias that maps the latents to the foundation features' width, so
// the VF loss can compare them (model/vae_loss.h). It exists for training
// only: the name is upstream's, and load_vae drops it from trained models,
// since encoding and decoding never use it.
class VfVaeImpl : public VaeImpl {
 public:
  VfVaeImpl(const VaeOptions& options, int64_t feature_channels);

  torch::nn::Conv2d linear_proj{nullptr};  // embed_dim -> feature_channels
};
TORCH_MODULE(VfVae);

// The tensors of a trained model that are VfVaeImpl's own.
inline constexpr char kVfProjectionPrefix[] = "linear_proj.";

}  // namespace vavae
