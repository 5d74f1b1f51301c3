#include "model/vae.h"

#include <torch/torch.h>

#include <algorithm>
#include <stdexcept>
#include <utility>

#include "tandem/error.h"
#include "tandem/nn/attention.h"
#include "tandem/nn/recompute.h"
#include "tandem/train/autocast_guard.h"

namespace vavae {
namespace {

namespace F = torch::nn::functional;

torch::nn::GroupNorm group_norm(int64_t channels, int64_t groups) {
  return torch::nn::GroupNorm(torch::nn::GroupNormOptions(groups, channels).eps(1e-6).affine(true));
}

torch::nn::Conv2d conv(int64_t in_channels, int64_t out_channels, int64_t kernel, int64_t stride = 1) {
  return torch::nn::Conv2d(torch::nn::Conv2dOptions(in_channels, out_channels, kernel)
                               .stride(stride)
                               .padding(kernel == 3 && stride == 1 ? 1 : 0));
}

std::string join(const std::vector<int64_t>& values) {
  std::string out;
  for (const int64_t value : values) out += (out.empty() ? "" : ", ") + std::to_string(value);
  return "{" + out + "}";
}

bool has_attention(const VaeOptions& options, int64_t resolution) {
  const auto& wanted = options.attn_resolutions;
  return std::find(wanted.begin(), wanted.end(), resolution) != wanted.end();
}

}  // namespace

VaeOptions VaeOptions::preset(const std::string& name) {
  VaeOptions options;
  if (name == "f16d32") return options;
  if (name == "tiny") {
    options.resolution = 32;
    options.ch = 32;
    options.ch_mult = {1, 2, 2};
    options.num_res_blocks = 1;
    options.attn_resolutions = {8};
    options.z_channels = 4;
    options.embed_dim = 4;
    return options;
  }
  throw tandem::UsageError("unknown VAE preset '" + name + "' (known: f16d32, tiny)");
}

void VaeOptions::validate() const {
  const std::pair<const char*, int64_t> sizes[] = {{"in_channels", in_channels},       {"out_ch", out_ch},
                                                   {"resolution", resolution},         {"ch", ch},
                                                   {"num_res_blocks", num_res_blocks}, {"z_channels", z_channels},
                                                   {"embed_dim", embed_dim},           {"norm_groups", norm_groups}};
  for (const auto& [key, value] : sizes)
    if (value < 1)
      throw tandem::UsageError("VAE config: " + std::string(key) + " must be positive, got " + std::to_string(value));
  if (ch_mult.empty()) throw tandem::UsageError("VAE config: ch_mult must name at least one level");
  std::vector<int64_t> widths = {ch};
  for (const int64_t mult : ch_mult) {
    if (mult < 1) throw tandem::UsageError("VAE config: ch_mult " + join(ch_mult) + " must be positive");
    widths.push_back(ch * mult);
  }
  for (const int64_t width : widths) {
    if (width % norm_groups != 0) {
      throw tandem::UsageError("VAE config: norm_groups (" + std::to_string(norm_groups) +
                               ") must divide every width ch * ch_mult = " + std::to_string(width) + " (ch " +
                               std::to_string(ch) + ", ch_mult " + join(ch_mult) + ")");
    }
  }
  if (dropout < 0 || dropout >= 1)
    throw tandem::UsageError("VAE config: dropout must be in [0, 1), got " + std::to_string(dropout));
}

int64_t VaeOptions::downsample_factor() const { return int64_t{1} << (ch_mult.size() - 1); }

ResnetBlockImpl::ResnetBlockImpl(int64_t in_channels, int64_t out_channels, int64_t groups, double dropout_p) {
  norm1 = register_module("norm1", group_norm(in_channels, groups));
  conv1 = register_module("conv1", conv(in_channels, out_channels, 3));
  norm2 = register_module("norm2", group_norm(out_channels, groups));
  dropout = register_module("dropout", torch::nn::Dropout(dropout_p));
  conv2 = register_module("conv2", conv(out_channels, out_channels, 3));
  if (in_channels != out_channels) nin_shortcut = register_module("nin_shortcut", conv(in_channels, out_channels, 1));
}

at::Tensor ResnetBlockImpl::forward(const at::Tensor& x) {
  at::Tensor h = conv1(torch::silu(norm1(x)));
  h = conv2(dropout(torch::silu(norm2(h))));
  return (nin_shortcut ? nin_shortcut(x) : x) + h;
}

AttnBlockImpl::AttnBlockImpl(int64_t channels, int64_t groups) {
  norm = register_module("norm", group_norm(channels, groups));
  q = register_module("q", conv(channels, channels, 1));
  k = register_module("k", conv(channels, channels, 1));
  v = register_module("v", conv(channels, channels, 1));
  proj_out = register_module("proj_out", conv(channels, channels, 1));
}

at::Tensor AttnBlockImpl::forward(const at::Tensor& x) {
  const int64_t n = x.size(0), c = x.size(1), h = x.size(2), w = x.size(3);
  const at::Tensor normed = norm(x);
  // [N, C, H, W] -> one head of H*W tokens of C features: [N, 1, HW, C].
  const auto tokens = [&](const at::Tensor& y) { return y.reshape({n, 1, c, h * w}).transpose(2, 3); };
  tandem::nn::AttentionOptions every_pixel;
  every_pixel.causal = false;
  const at::Tensor out = tandem::nn::attention(tokens(q(normed)), tokens(k(normed)), tokens(v(normed)), every_pixel);
  return x + proj_out(out.transpose(2, 3).reshape({n, c, h, w}));
}

DownsampleImpl::DownsampleImpl(int64_t channels) {
  conv = register_module("conv", vavae::conv(channels, channels, 3, 2));
}

at::Tensor DownsampleImpl::forward(const at::Tensor& x) { return conv(at::constant_pad_nd(x, {0, 1, 0, 1}, 0.0)); }

UpsampleImpl::UpsampleImpl(int64_t channels) { conv = register_module("conv", vavae::conv(channels, channels, 3)); }

at::Tensor UpsampleImpl::forward(const at::Tensor& x) {
  const std::vector<int64_t> size = {2 * x.size(2), 2 * x.size(3)};
  return conv(F::interpolate(x, F::InterpolateFuncOptions().size(size).mode(torch::kNearest)));
}

LevelImpl::LevelImpl(int64_t in_channels, int64_t out_channels, int64_t num_blocks, bool attention, Resample resample,
                     int64_t groups, double dropout) {
  block = register_module("block", torch::nn::ModuleList());
  attn = register_module("attn", torch::nn::ModuleList());
  for (int64_t i = 0; i < num_blocks; ++i) {
    block->push_back(ResnetBlock(i == 0 ? in_channels : out_channels, out_channels, groups, dropout));
    if (attention) attn->push_back(AttnBlock(out_channels, groups));
  }
  if (resample == Resample::kDown) downsample = register_module("downsample", Downsample(out_channels));
  if (resample == Resample::kUp) upsample = register_module("upsample", Upsample(out_channels));
}

at::Tensor LevelImpl::forward(const at::Tensor& x) {
  at::Tensor h = x;
  for (size_t i = 0; i < block->size(); ++i) {
    h = block[i]->as<ResnetBlock>()->forward(h);
    if (!attn->is_empty()) h = attn[i]->as<AttnBlock>()->forward(h);
  }
  if (downsample) h = downsample(h);
  if (upsample) h = upsample(h);
  return h;
}

MidImpl::MidImpl(int64_t channels, int64_t groups, double dropout) {
  block_1 = register_module("block_1", ResnetBlock(channels, channels, groups, dropout));
  attn_1 = register_module("attn_1", AttnBlock(channels, groups));
  block_2 = register_module("block_2", ResnetBlock(channels, channels, groups, dropout));
}

at::Tensor MidImpl::forward(const at::Tensor& x) { return block_2(attn_1(block_1(x))); }

namespace {

// train.recompute = "blocks" (vae.recompute) keeps only the input of each
// resolution level and of the middle, and runs them again in backward.
at::Tensor recomputed_level(LevelImpl& level, const at::Tensor& x) {
  return tandem::nn::recomputed(level, [&level](const at::Tensor& h, const at::Tensor&) { return level.forward(h); }, x);
}

at::Tensor recomputed_mid(MidImpl& mid, const at::Tensor& x) {
  return tandem::nn::recomputed(mid, [&mid](const at::Tensor& h, const at::Tensor&) { return mid.forward(h); }, x);
}

}  // namespace

EncoderImpl::EncoderImpl(const VaeOptions& options) {
  const int64_t levels = static_cast<int64_t>(options.ch_mult.size());
  const int64_t groups = options.norm_groups;
  conv_in = register_module("conv_in", conv(options.in_channels, options.ch, 3));
  down = register_module("down", torch::nn::ModuleList());
  int64_t width = options.ch, resolution = options.resolution;
  for (int64_t level = 0; level < levels; ++level) {
    const int64_t out = options.ch * options.ch_mult[level];
    const Resample resample = level == levels - 1 ? Resample::kNone : Resample::kDown;
    down->push_back(Level(width, out, options.num_res_blocks, has_attention(options, resolution), resample, groups,
                          options.dropout));
    width = out;
    if (resample == Resample::kDown) resolution /= 2;
  }
  mid = register_module("mid", Mid(width, groups, options.dropout));
  norm_out = register_module("norm_out", group_norm(width, groups));
  conv_out = register_module("conv_out", conv(width, 2 * options.z_channels, 3));
}

std::vector<std::string> fp32_weights(torch::nn::Module& model) {
  std::vector<std::string> names;
  if (model.as<VfVaeImpl>()) names.push_back(std::string(kVfProjectionPrefix) + "weight");
  for (const auto& item : model.named_modules("", /*include_self=*/false)) {
    if (item.value()->as<EncoderImpl>()) names.push_back(item.key() + ".conv_out.weight");
    if (item.value()->as<VfVaeImpl>()) names.push_back(item.key() + "." + kVfProjectionPrefix + "weight");
  }
  return names;
}

at::Tensor EncoderImpl::forward(const at::Tensor& x) {
  at::Tensor h = conv_in(x);
  for (const auto& level : *down) h = recomputed_level(*level->as<Level>(), h);
  h = torch::silu(norm_out(recomputed_mid(*mid, h)));
  // In fp32 under any autocast: VA-VAE's adaptive weight is the norm of this
  // layer's weight gradient, which a half convolution's backward sums over
  // N x h x w positions into infinity (vae_loss.h, adaptive_weight).
  tandem::AutocastOff fp32;
  return conv_out(h.to(at::kFloat));
}

DecoderImpl::DecoderImpl(const VaeOptions& options) {
  const int64_t levels = static_cast<int64_t>(options.ch_mult.size());
  const int64_t groups = options.norm_groups;
  int64_t width = options.ch * options.ch_mult.back();
  int64_t resolution = options.resolution / options.downsample_factor();
  conv_in = register_module("conv_in", conv(options.z_channels, width, 3));
  mid = register_module("mid", Mid(width, groups, options.dropout));
  // Built lowest resolution first, since each level's input width is the
  // previous one's output, then registered by level.
  std::vector<Level> built(levels, Level(nullptr));
  for (int64_t level = levels - 1; level >= 0; --level) {
    const int64_t out = options.ch * options.ch_mult[level];
    const Resample resample = level == 0 ? Resample::kNone : Resample::kUp;
    built[level] = Level(width, out, options.num_res_blocks + 1, has_attention(options, resolution), resample, groups,
                         options.dropout);
    width = out;
    if (resample == Resample::kUp) resolution *= 2;
  }
  up = register_module("up", torch::nn::ModuleList());
  for (const Level& level : built) up->push_back(level);
  norm_out = register_module("norm_out", group_norm(width, groups));
  conv_out = register_module("conv_out", conv(width, options.out_ch, 3));
}

at::Tensor DecoderImpl::forward(const at::Tensor& z) {
  at::Tensor h = recomputed_mid(*mid, conv_in(z));
  for (int64_t level = static_cast<int64_t>(up->size()) - 1; level >= 0; --level)
    h = recomputed_level(*up[level]->as<Level>(), h);
  return conv_out(torch::silu(norm_out(h)));
}

tandem::Activations VaeOptions::activation_bytes(const tandem::ActivationQuery& q, int64_t image_size) const {
  const int64_t e = q.element_bytes, levels = static_cast<int64_t>(ch_mult.size());
  // Bytes a pixel of each tensor, per image. A GroupNorm -> SiLU -> conv
  // chain keeps the norm's and the SiLU's outputs, fp32 under autocast
  // (group_norm is on its fp32 list), and the conv's half copy of its input.
  const int64_t chain = 8 + (e < 4 ? e : 0);
  // ResnetBlock: a chain on its input, the first conv's output, a chain on
  // that, and its output.
  const auto resblock = [&](int64_t cin, int64_t cout) { return cin * chain + cout * (chain + 2 * e); };
  // AttnBlock: the norm's output (and its half copy), q, k and v, the
  // attention's output, its copy back to [N, C, H, W], and the output.
  const auto attention = [&](int64_t c) { return c * (4 + (e < 4 ? e : 0) + 6 * e); };
  const auto px = [&](int64_t level) {
    const int64_t r = image_size >> level;
    return r * r;
  };
  int64_t saved = 3 * px(0) * 4 + ch * px(0) * e;  // the image, conv_in's output
  int64_t kept = saved;                            // under recomputation: what is not in a level or the middle
  // Under recomputation, backward runs the levels and middles again in the
  // reverse order of forward, each beside the kept inputs of those before it.
  int64_t inputs = 0, again = 0;
  // Evaluating, nothing is kept: one block's tensors at a time, at most.
  int64_t one_block = 0;
  const auto block_at = [&](int64_t bytes) {
    one_block = std::max(one_block, bytes);
    return bytes;
  };
  const auto add = [&](int64_t level_input, int64_t own) {
    saved += own;
    inputs += level_input;
    again = std::max(again, inputs + own);
  };
  int64_t width = ch;
  for (int64_t l = 0; l < levels; ++l) {
    const int64_t out = ch * ch_mult[l];
    int64_t own = 0;
    for (int64_t b = 0; b < num_res_blocks; ++b) {
      own += block_at(resblock(b == 0 ? width : out, out) * px(l));
      if (has_attention(*this, resolution >> l)) own += block_at(attention(out) * px(l));
    }
    if (l < levels - 1) own += out * e * ((image_size >> l) + 1) * ((image_size >> l) + 1) + out * e * px(l + 1);
    add(width * e * px(l), own);
    width = out;
  }
  const int64_t bottom = px(levels - 1);
  const int64_t mid = (2 * resblock(width, width) + attention(width)) * bottom;
  add(width * e * bottom, mid);
  // The encoder's end in fp32 (its norm, SiLU, fp32 copy and conv_out), the
  // moments, the posterior's std, sample and KL terms, post_quant_conv's and
  // the decoder's conv_in's outputs.
  const int64_t ends =
      (width * 12 + 2 * z_channels * 4 + 2 * embed_dim * e + 6 * embed_dim * 4 + z_channels * e) * bottom;
  saved += ends;
  kept += ends;
  add(width * e * bottom, mid);
  for (int64_t l = levels - 1; l >= 0; --l) {
    const int64_t out = ch * ch_mult[l];
    int64_t own = 0;
    for (int64_t b = 0; b <= num_res_blocks; ++b) {
      own += block_at(resblock(b == 0 ? width : out, out) * px(l));
      if (has_attention(*this, resolution >> l)) own += block_at(attention(out) * px(l));
    }
    if (l > 0) own += 2 * out * e * px(l - 1);
    add(width * e * px(l), own);
    width = out;
  }
  // The decoder's end (a chain and conv_out's output), the L1's fp32
  // difference and its absolute value: freed before the levels run again.
  const int64_t tail = (width * chain + out_ch * e + 2 * out_ch * 4) * px(0);
  saved += tail;
  // Backward starts with the reconstruction's gradient and, through
  // conv_out, that of the last chain; it ends beside the first level's
  // gradients, two of conv_in's output's size.
  const int64_t first = (out_ch * 4 + width * 4) * px(0);
  const int64_t last = 2 * ch * 4 * px(0);
  // Evaluating: the images and their reconstruction beside one block (with
  // its input), or the decoder's end.
  const int64_t evaluation = q.micro_batch * (2 * 3 * px(0) * 4 + std::max(2 * one_block, tail));
  const std::string by = "the forward of a micro-batch of " + std::to_string(q.micro_batch) + " images";
  if (q.recompute)
    return {q.micro_batch * (kept + tail + inputs + first), q.micro_batch * (kept + again + last), evaluation, by};
  return {q.micro_batch * (saved + first), q.micro_batch * last, evaluation, by};
}

VaeImpl::VaeImpl(const VaeOptions& options) : options_(options) {
  options.validate();
  encoder = register_module("encoder", Encoder(options));
  decoder = register_module("decoder", Decoder(options));
  quant_conv = register_module("quant_conv", conv(2 * options.z_channels, 2 * options.embed_dim, 1));
  post_quant_conv = register_module("post_quant_conv", conv(options.embed_dim, options.z_channels, 1));
}

Posterior VaeImpl::encode(const at::Tensor& x) {
  const int64_t f = options_.downsample_factor();
  if (x.dim() != 4 || x.size(1) != options_.in_channels || x.size(2) % f != 0 || x.size(3) % f != 0) {
    throw std::invalid_argument("VAE encode: expected images [N, " + std::to_string(options_.in_channels) +
                                ", H, W] with H and W multiples of " + std::to_string(f) + ", got " +
                                c10::str(x.sizes()));
  }
  return Posterior::from_moments(quant_conv(encoder(x)));
}

at::Tensor VaeImpl::decode(const at::Tensor& z) {
  if (z.dim() != 4 || z.size(1) != options_.embed_dim) {
    throw std::invalid_argument("VAE decode: expected latents [N, " + std::to_string(options_.embed_dim) +
                                ", h, w], got " + c10::str(z.sizes()));
  }
  return decoder(post_quant_conv(z));
}

VaeOutput VaeImpl::forward(const at::Tensor& x, const at::Tensor& noise) {
  Posterior posterior = encode(x);
  at::Tensor latents = posterior.sample(noise);
  return {decode(latents), std::move(posterior), latents};
}

VaeOutput VaeImpl::forward(const at::Tensor& x, at::Generator generator) {
  Posterior posterior = encode(x);
  at::Tensor latents = posterior.sample(std::move(generator));
  return {decode(latents), std::move(posterior), latents};
}

VfVaeImpl::VfVaeImpl(const VaeOptions& options, int64_t feature_channels) : VaeImpl(options) {
  linear_proj = register_module(
      "linear_proj", torch::nn::Conv2d(torch::nn::Conv2dOptions(options.embed_dim, feature_channels, 1).bias(false)));
}

}  // namespace vavae
