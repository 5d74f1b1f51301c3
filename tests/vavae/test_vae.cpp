#include <gtest/gtest.h>
#include <ATen/CPUGeneratorImpl.h>
#include <torch/torch.h>

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "model/vae.h"
#include "model/vae_loss.h"
#include "tandem/error.h"
#include "tandem/io/safetensors.h"
#include "tandem/nn/recompute.h"
#include "tandem/obs/tensor_memory.h"
#include "../unit/plan_accuracy.h"
#include "../unit/test_support.h"

namespace {

using vavae::Posterior;
using vavae::Vae;
using vavae::VaeOptions;

std::map<std::string, std::vector<int64_t>> parameter_shapes(const Vae& vae) {
  std::map<std::string, std::vector<int64_t>> shapes;
  for (const auto& item : vae->named_parameters()) shapes[item.key()] = item.value().sizes().vec();
  return shapes;
}

TEST(VavaeVae, TinyShapesAt32And64) {
  torch::manual_seed(0);
  Vae vae(VaeOptions::preset("tiny"));
  torch::NoGradGuard no_grad;
  for (const int64_t size : {32, 64}) {
    const at::Tensor x = torch::rand({2, 3, size, size}) * 2 - 1;
    const Posterior posterior = vae->encode(x);
    EXPECT_EQ(posterior.mean.sizes(), (std::vector<int64_t>{2, 4, size / 4, size / 4}));
    EXPECT_EQ(posterior.logvar.sizes(), posterior.mean.sizes());
    EXPECT_EQ(vae->decode(posterior.mean).sizes(), (std::vector<int64_t>{2, 3, size, size}));
    const auto out = vae->forward(x, torch::randn_like(posterior.mean));
    EXPECT_EQ(out.reconstruction.sizes(), x.sizes());
    EXPECT_TRUE(torch::isfinite(out.reconstruction).all().item<bool>());
  }
  // Not square, and a batch of one.
  EXPECT_EQ(vae->encode(torch::zeros({1, 3, 32, 64})).mean.sizes(), (std::vector<int64_t>{1, 4, 8, 16}));
}

// The upstream structure (LDM's Encoder/Decoder with VA-VAE's ddconfig),
// counted by hand from its loops: 342 tensors, 69,836,067 numbers.
TEST(VavaeVae, F16d32HasUpstreamNamesAndCount) {
  const Vae vae(VaeOptions::preset("f16d32"));
  const auto shapes = parameter_shapes(vae);
  EXPECT_EQ(shapes.size(), 342u);
  int64_t total = 0;
  for (const auto& p : vae->parameters()) total += p.numel();
  EXPECT_EQ(total, 69836067);

  const std::map<std::string, std::vector<int64_t>> expected = {
      {"encoder.conv_in.weight", {128, 3, 3, 3}},
      {"encoder.down.0.block.0.norm1.weight", {128}},
      {"encoder.down.0.block.1.conv2.weight", {128, 128, 3, 3}},
      {"encoder.down.0.downsample.conv.weight", {128, 128, 3, 3}},
      {"encoder.down.2.block.0.nin_shortcut.weight", {256, 128, 1, 1}},
      {"encoder.down.4.block.0.nin_shortcut.bias", {512}},
      {"encoder.down.4.attn.1.q.weight", {512, 512, 1, 1}},
      {"encoder.down.4.attn.0.proj_out.bias", {512}},
      {"encoder.mid.block_1.conv1.weight", {512, 512, 3, 3}},
      {"encoder.mid.attn_1.norm.weight", {512}},
      {"encoder.mid.block_2.norm2.bias", {512}},
      {"encoder.norm_out.weight", {512}},
      {"encoder.conv_out.weight", {64, 512, 3, 3}},
      {"quant_conv.weight", {64, 64, 1, 1}},
      {"post_quant_conv.weight", {32, 32, 1, 1}},
      {"decoder.conv_in.weight", {512, 32, 3, 3}},
      {"decoder.mid.attn_1.v.weight", {512, 512, 1, 1}},
      {"decoder.up.4.block.0.conv1.weight", {512, 512, 3, 3}},
      {"decoder.up.4.attn.2.k.weight", {512, 512, 1, 1}},
      {"decoder.up.4.upsample.conv.weight", {512, 512, 3, 3}},
      {"decoder.up.3.block.0.nin_shortcut.weight", {256, 512, 1, 1}},
      {"decoder.up.3.block.2.conv2.weight", {256, 256, 3, 3}},
      {"decoder.up.1.block.0.nin_shortcut.weight", {128, 256, 1, 1}},
      {"decoder.up.1.upsample.conv.weight", {128, 128, 3, 3}},
      {"decoder.up.0.block.2.conv2.weight", {128, 128, 3, 3}},
      {"decoder.norm_out.bias", {128}},
      {"decoder.conv_out.weight", {3, 128, 3, 3}},
  };
  for (const auto& [name, shape] : expected) {
    const auto it = shapes.find(name);
    ASSERT_NE(it, shapes.end()) << name;
    EXPECT_EQ(it->second, shape) << name;
  }
  // Attention only at 16x16 (level 4), no resampler at the ends, no shortcut
  // where the widths agree.
  for (const std::string absent :
       {"encoder.down.3.attn.0.q.weight", "encoder.down.4.downsample.conv.weight", "decoder.up.0.upsample.conv.weight",
        "decoder.up.3.attn.0.q.weight", "encoder.down.1.block.0.nin_shortcut.weight",
        "decoder.up.4.block.0.nin_shortcut.weight"}) {
    EXPECT_EQ(shapes.count(absent), 0u) << absent;
  }
}

// 256x256 takes ~100 GFLOP, too slow for a unit test; the modules do not
// depend on the input size, so 32x32 checks the f16 shapes end to end.
TEST(VavaeVae, F16d32ShapesOnASmallImage) {
  torch::manual_seed(0);
  Vae vae(VaeOptions::preset("f16d32"));
  torch::NoGradGuard no_grad;
  const Posterior posterior = vae->encode(torch::zeros({1, 3, 32, 32}));
  EXPECT_EQ(posterior.mean.sizes(), (std::vector<int64_t>{1, 32, 2, 2}));
  EXPECT_EQ(vae->decode(posterior.mean).sizes(), (std::vector<int64_t>{1, 3, 32, 32}));
  EXPECT_EQ(vae->options().downsample_factor(), 16);
}

TEST(VavaeVae, LogvarIsClamped) {
  const at::Tensor moments = torch::tensor({1.0, 2.0, -100.0, 100.0}).reshape({1, 4, 1, 1});
  const Posterior posterior = Posterior::from_moments(moments);
  EXPECT_TRUE(torch::equal(posterior.mean.flatten(), torch::tensor({1.0f, 2.0f})));
  EXPECT_TRUE(torch::equal(posterior.logvar.flatten(), torch::tensor({-30.0f, 20.0f})));

  // Through the model: quant_conv made to give mean 0.5 and logvar 50.
  Vae vae(VaeOptions::preset("tiny"));
  torch::NoGradGuard no_grad;
  vae->quant_conv->weight.zero_();
  vae->quant_conv->bias.copy_(torch::tensor({0.5, 0.5, 0.5, 0.5, 50.0, 50.0, 50.0, 50.0}));
  const Posterior clamped = vae->encode(torch::zeros({1, 3, 32, 32}));
  EXPECT_TRUE(torch::equal(clamped.mean, torch::full({1, 4, 8, 8}, 0.5)));
  EXPECT_TRUE(torch::equal(clamped.logvar, torch::full({1, 4, 8, 8}, 20.0)));
}

TEST(VavaeVae, PosteriorSampleAndKlByHand) {
  const Posterior posterior{torch::tensor({1.0, -2.0}).reshape({1, 2, 1, 1}),
                            torch::tensor({0.0, std::log(4.0)}).reshape({1, 2, 1, 1})};
  const at::Tensor noise = torch::tensor({0.5, -1.0}).reshape({1, 2, 1, 1});
  // mean + exp(logvar / 2) * noise: 1 + 1 * 0.5, -2 + 2 * -1
  EXPECT_TRUE(torch::allclose(posterior.sample(noise).flatten(), torch::tensor({1.5, -4.0})));
  // 0.5 * (1 + 1 - 1 - 0) + 0.5 * (4 + 4 - 1 - log 4)
  EXPECT_NEAR(posterior.kl().item<double>(), 0.5 + 0.5 * (7.0 - std::log(4.0)), 1e-5);

  at::Generator a = at::detail::createCPUGenerator(7), b = at::detail::createCPUGenerator(7);
  at::Generator c = at::detail::createCPUGenerator(8);
  const at::Tensor first = posterior.sample(a);
  EXPECT_TRUE(torch::equal(first, posterior.sample(b)));
  EXPECT_FALSE(torch::equal(first, posterior.sample(c)));
}

// Zero padding on the right and bottom only: with an all-ones 3x3 kernel over
// a 4x4 image of ones, the output's corners see 9, 6, 6 and 4 pixels.
TEST(VavaeVae, DownsamplePadsRightAndBottom) {
  vavae::Downsample down(1);
  torch::NoGradGuard no_grad;
  down->conv->weight.fill_(1.0);
  down->conv->bias.zero_();
  const at::Tensor out = down(torch::ones({1, 1, 4, 4}));
  EXPECT_TRUE(torch::equal(out.flatten(), torch::tensor({9.0f, 6.0f, 6.0f, 4.0f})));
}

// softmax(q^T k / sqrt(C)) over positions, written out for one image.
TEST(VavaeVae, AttnBlockIsSpatialSelfAttention) {
  torch::manual_seed(3);
  vavae::AttnBlock block(32, 32);
  const at::Tensor x = torch::randn({1, 32, 3, 5});
  torch::NoGradGuard no_grad;
  const auto flat = [](const at::Tensor& y) { return y.reshape({32, 15}); };  // [C, HW]
  const at::Tensor h = block->norm(x);
  const at::Tensor q = flat(block->q(h)), k = flat(block->k(h)), v = flat(block->v(h));
  const at::Tensor weights = torch::softmax(torch::matmul(q.t(), k) / std::sqrt(32.0), 1);  // [HW query, HW key]
  const at::Tensor attended = torch::matmul(v, weights.t()).reshape({1, 32, 3, 5});
  EXPECT_TRUE(torch::allclose(block(x), x + block->proj_out(attended), 1e-5, 1e-5));
}

// The export is write_safetensors of named_parameters: a fresh model loaded
// from the file by name decodes the same.
class VavaeVaeExport : public tandem::testing::TempDirTest {};

TEST_F(VavaeVaeExport, SafetensorsRoundTripByName) {
  torch::manual_seed(1);
  Vae trained(VaeOptions::preset("tiny"));
  tandem::write_safetensors(path("vae.safetensors"), tandem::named_tensors(trained->named_parameters()));
  torch::manual_seed(2);
  Vae fresh(VaeOptions::preset("tiny"));
  torch::NoGradGuard no_grad;
  auto params = fresh->named_parameters();
  const tandem::NamedTensors loaded = tandem::read_safetensors(path("vae.safetensors"));
  ASSERT_EQ(loaded.size(), params.size());
  for (const auto& [name, tensor] : loaded) params[name].copy_(tensor);
  const at::Tensor z = torch::randn({1, 4, 8, 8});
  EXPECT_TRUE(torch::equal(fresh->decode(z), trained->decode(z)));
}

TEST(VavaeVae, OptionsAreChecked) {
  EXPECT_THROW(VaeOptions::preset("huge"), tandem::UsageError);
  VaeOptions options = VaeOptions::preset("tiny");
  options.ch = 48;  // GroupNorm(32) cannot split 48 channels
  const std::string message = tandem::testing::message_of<tandem::UsageError>([&] { options.validate(); });
  EXPECT_NE(message.find("norm_groups"), std::string::npos) << message;
  options.norm_groups = 16;
  EXPECT_NO_THROW(options.validate());
  options.ch_mult.clear();
  EXPECT_THROW(options.validate(), tandem::UsageError);
}

}  // namespace

// vae.recompute = "blocks": each resolution level and the middle of the
// encoder and decoder run again in backward, dropout drawing the same masks;
// the gradients are bitwise the same, and the forward keeps less than half
// the bytes for backward.
TEST(VavaeVae, RecomputedLevelsGiveBitwiseTheSameGradients) {
  const c10::Device cpu(c10::kCPU);
  tandem::count_cpu_tensors();
  VaeOptions options = VaeOptions::preset("tiny");
  options.dropout = 0.1;
  torch::manual_seed(0);
  Vae vae(options);
  vae->train();
  const at::Tensor x = torch::rand({2, 3, 32, 32}) * 2 - 1;
  const at::Tensor noise = torch::randn({2, 4, 8, 8});
  std::map<bool, int64_t> forward_bytes;
  const auto gradients = [&](bool recompute) {
    vae->zero_grad();
    torch::manual_seed(7);
    {
      tandem::nn::RecomputeScope scope(recompute);
      const int64_t before = tandem::tensor_memory(cpu).live;
      const at::Tensor loss = vae->forward(x, noise).reconstruction.pow(2).sum();
      forward_bytes[recompute] = tandem::tensor_memory(cpu).live - before;
      loss.backward();
    }
    std::vector<at::Tensor> grads;
    for (const auto& p : vae->parameters()) grads.push_back(p.grad().clone());
    return grads;
  };
  const auto kept = gradients(false), redone = gradients(true);
  const auto names = vae->named_parameters().keys();
  for (size_t i = 0; i < kept.size(); ++i)
    EXPECT_TRUE(torch::equal(kept[i], redone[i])) << names[i];
  EXPECT_LT(forward_bytes[true], forward_bytes[false] / 2)
      << "kept by the forward: " << forward_bytes[true] << " bytes recomputing, " << forward_bytes[false] << " not";
}

// The memory plan's VAE estimate against measured training steps (the table
// in docs/training.md, tests/bench/bench_memory_plan, has more): the tiny
// preset on 8 images of 32 pixels, and a wider one with attention at two
// levels on 4 of 64.
TEST(VavaeVae, MemoryPlanIsWithin15PercentOfTheMeasuredPeak) {
  vavae::VaeOptions wide = vavae::VaeOptions::preset("tiny");
  wide.ch = 64;
  wide.num_res_blocks = 2;
  wide.resolution = 64;
  wide.attn_resolutions = {16, 32};
  const std::vector<std::tuple<vavae::VaeOptions, int64_t, int64_t>> cases = {
      {vavae::VaeOptions::preset("tiny"), 8, 32}, {wide, 4, 64}};
  for (const auto& [options, batch, size] : cases) {
    const at::Tensor x = torch::rand({batch, 3, size, size}) * 2 - 1;
    const int64_t f = options.downsample_factor();
    const at::Tensor noise = torch::randn({batch, options.embed_dim, size / f, size / f});
    for (bool recompute : {false, true}) {
      const auto fig =
          plan_accuracy::figures([&] { return vavae::Vae(options).ptr(); },
                                 [&](torch::nn::Module& m) {
                                   const vavae::VaeOutput out = static_cast<vavae::VaeImpl&>(m).forward(x, noise);
                                   return vavae::vae_loss(x, out.reconstruction, out.posterior).total * batch;
                                 },
                                 [&](bool r) {
                                   return options.activation_bytes({batch, 4, r}, size);
                                 },
                                 recompute);
      EXPECT_NEAR(fig.ratio(), 1.0, 0.15)
          << "ch " << options.ch << ", recompute " << recompute << ": planned " << fig.planned / (1 << 20)
          << " MB (activations " << fig.plan.activations / (1 << 20) << ", at end "
          << fig.plan.activations_end / (1 << 20) << "), measured " << fig.measured / (1 << 20) << " MB, forward kept "
          << fig.kept / (1 << 20);
    }
  }
}
