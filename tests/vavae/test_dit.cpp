#include <gtest/gtest.h>
#include <ATen/CPUGeneratorImpl.h>
#include <torch/torch.h>

#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "../unit/plan_accuracy.h"
#include "model/dit.h"
#include "model/pos_embed.h"
#include "tandem/error.h"

namespace {

using vavae::Dit;
using vavae::DitOptions;

// The tiny preset on tiny-VAE latents (4 x 8 x 8) for 10 users.
DitOptions tiny(int64_t patch_size = 1, bool qk_norm = false) {
  DitOptions options = DitOptions::preset("tiny");
  options.input_size = 8;
  options.in_channels = 4;
  options.num_classes = 10;
  options.patch_size = patch_size;
  options.qk_norm = qk_norm;
  return options;
}

// Fills every zero-initialised layer, so the output depends on everything.
void randomize_zeros(Dit& dit) {
  torch::NoGradGuard no_grad;
  for (auto& p : dit->parameters())
    if (p.abs().max().item<double>() == 0.0) p.normal_(0.0, 0.1);
}

struct Batch {
  at::Tensor x, t, y;
};

Batch batch(int64_t n) {
  return {torch::randn({n, 4, 8, 8}), torch::rand({n}), torch::randint(0, 11, {n}, torch::kLong)};
}

TEST(VavaeDit, FreshModelOutputsExactlyZero) {
  torch::manual_seed(0);
  Dit dit(tiny());
  const Batch b = batch(3);
  const at::Tensor out = dit(b.x, b.t, b.y);
  EXPECT_EQ(out.sizes(), b.x.sizes());
  EXPECT_TRUE(torch::equal(out, torch::zeros_like(b.x)));
}

TEST(VavaeDit, ForwardWithPatch1And2) {
  for (const int64_t patch : {1, 2}) {
    for (const bool qk_norm : {false, true}) {
      torch::manual_seed(1);
      Dit dit(tiny(patch, qk_norm));
      randomize_zeros(dit);
      const Batch b = batch(3);
      const at::Tensor out = dit(b.x, b.t, b.y);
      EXPECT_EQ(out.sizes(), b.x.sizes());
      EXPECT_TRUE(torch::isfinite(out).all().item<bool>());
      EXPECT_GT(out.abs().max().item<double>(), 0.0);
      // Rows do not mix: one sample alone gives its row of the batch.
      EXPECT_TRUE(torch::allclose(dit(b.x.narrow(0, 1, 1), b.t.narrow(0, 1, 1), b.y.narrow(0, 1, 1)),
                                  out.narrow(0, 1, 1), 1e-4, 1e-5));
      // Every parameter takes part.
      out.pow(2).sum().backward();
      for (const auto& item : dit->named_parameters())
        EXPECT_TRUE(item.value().grad().defined() && item.value().grad().abs().sum().item<double>() > 0) << item.key();
    }
  }
}

// With a zero final weight the output is final_layer.linear's bias in every
// patch: bias[(i * p + j) * C + c] lands at channel c, offset (i, j) of the patch.
TEST(VavaeDit, UnpatchifyLayout) {
  Dit dit(tiny(2));
  torch::NoGradGuard no_grad;
  dit->final_layer->linear->bias.copy_(torch::arange(16, torch::kFloat));
  const Batch b = batch(1);
  const at::Tensor out = dit(b.x, b.t, b.y);
  for (int64_t c = 0; c < 4; ++c)
    for (int64_t i = 0; i < 2; ++i)
      for (int64_t j = 0; j < 2; ++j) {
        const double expected = static_cast<double>((i * 2 + j) * 4 + c);
        EXPECT_EQ(out[0][c][2 + i][6 + j].item<double>(), expected) << c << " " << i << " " << j;
      }
}

TEST(VavaeDit, UpstreamNamesAndShapes) {
  const Dit dit(tiny(2, true));
  std::map<std::string, std::vector<int64_t>> shapes;
  for (const auto& item : dit->named_parameters()) shapes[item.key()] = item.value().sizes().vec();
  const int64_t hidden = 64, mlp = static_cast<int64_t>(2.0 / 3.0 * 4 * 64);  // int(170.67) = 170
  const std::map<std::string, std::vector<int64_t>> expected = {
      {"x_embedder.proj.weight", {hidden, 4, 2, 2}},
      {"x_embedder.proj.bias", {hidden}},
      {"t_embedder.mlp.0.weight", {hidden, 256}},
      {"t_embedder.mlp.2.weight", {hidden, hidden}},
      {"y_embedder.embedding_table.weight", {11, hidden}},
      {"blocks.0.norm1.weight", {hidden}},
      {"blocks.0.attn.qkv.weight", {3 * hidden, hidden}},
      {"blocks.0.attn.qkv.bias", {3 * hidden}},
      {"blocks.0.attn.q_norm.weight", {16}},
      {"blocks.0.attn.k_norm.weight", {16}},
      {"blocks.0.attn.proj.weight", {hidden, hidden}},
      {"blocks.1.norm2.weight", {hidden}},
      {"blocks.1.mlp.w12.weight", {2 * mlp, hidden}},
      {"blocks.1.mlp.w3.weight", {hidden, mlp}},
      {"blocks.1.adaLN_modulation.1.weight", {6 * hidden, hidden}},
      {"final_layer.norm_final.weight", {hidden}},
      {"final_layer.linear.weight", {2 * 2 * 4, hidden}},
      {"final_layer.adaLN_modulation.1.bias", {2 * hidden}},
  };
  for (const auto& [name, shape] : expected) {
    const auto it = shapes.find(name);
    ASSERT_NE(it, shapes.end()) << name;
    EXPECT_EQ(it->second, shape) << name;
  }
  // 3 embedders (5 + 2 tensors), 2 blocks of 14, final layer 5.
  EXPECT_EQ(shapes.size(), 2u + 4u + 1u + 2u * 14u + 5u);
  // pos_embed is a fixed buffer, not learned.
  EXPECT_EQ(shapes.count("pos_embed"), 0u);
  const at::Tensor* pos_embed = dit->named_buffers().find("pos_embed");
  ASSERT_NE(pos_embed, nullptr);
  EXPECT_TRUE(torch::equal(*pos_embed, vavae::sincos_pos_embed_2d(hidden, 4).unsqueeze(0)));
}

TEST(VavaeDit, TimestepFrequencyEmbeddingByHand) {
  // dim 4: frequencies 1 and 10000^(-1/2); cos half first.
  const at::Tensor e = vavae::TimestepEmbedderImpl::frequency_embedding(torch::tensor({0.0f, 0.5f}), 4);
  EXPECT_TRUE(torch::allclose(e[0], torch::tensor({1.0f, 1.0f, 0.0f, 0.0f})));
  EXPECT_TRUE(torch::allclose(e[1], torch::tensor({std::cos(0.5f), std::cos(0.005f), std::sin(0.5f), std::sin(0.005f)}),
                              1e-6, 1e-7));
}

TEST(VavaeDit, LabelDropoutMapsToTheNullClass) {
  DitOptions options = tiny();
  options.class_dropout_prob = 0.5;
  Dit dit(options);
  const at::Tensor y = torch::arange(64, torch::kLong) % 10;
  at::Generator a = at::detail::createCPUGenerator(5), b = at::detail::createCPUGenerator(5);
  const at::Tensor dropped = dit->drop_labels(y, a);
  const at::Tensor mask = at::rand({64}, b) < 0.5;
  EXPECT_TRUE(torch::equal(dropped, torch::where(mask, torch::full_like(y, 10), y)));
  EXPECT_GT(mask.sum().item<int64_t>(), 0);
  EXPECT_LT(mask.sum().item<int64_t>(), 64);

  EXPECT_TRUE(
      torch::equal(vavae::mask_labels(torch::tensor({3, 4, 5}, torch::kLong), torch::tensor({false, true, false}), 10),
                   torch::tensor({3, 10, 5}, torch::kLong)));
  // The null class is the table's last row.
  EXPECT_EQ(dit->null_class(), 10);
  EXPECT_TRUE(torch::equal(dit->y_embedder(torch::tensor({10}, torch::kLong))[0],
                           dit->y_embedder->embedding_table->weight[10]));

  options.class_dropout_prob = 0.0;
  const Dit never(options);
  EXPECT_TRUE(torch::equal(never->drop_labels(y, a), y));
}

TEST(VavaeDit, OptionsAreChecked) {
  EXPECT_THROW(DitOptions::preset("H/1"), tandem::UsageError);
  EXPECT_EQ(DitOptions::preset("XL/1").hidden_size, 1152);
  EXPECT_EQ(DitOptions::preset("B/1").depth, 12);
  DitOptions options = tiny();
  options.num_heads = 3;
  EXPECT_THROW(options.validate(), tandem::UsageError);
  options = tiny(3);  // 8 is not a multiple of 3
  EXPECT_THROW(options.validate(), tandem::UsageError);
  options = tiny();
  options.hidden_size = 40;  // heads of 10: RoPE needs multiples of 4
  EXPECT_THROW(options.validate(), tandem::UsageError);
}

}  // namespace

// The memory plan's DiT estimate against a measured training step (the
// table in docs/training.md, tests/bench/bench_memory_plan, has B/1): the tiny preset on
// 8 latents of 16 x 16 x 32.
TEST(VavaeDit, MemoryPlanIsWithin15PercentOfTheMeasuredPeak) {
  const vavae::DitOptions options = vavae::DitOptions::preset("tiny");
  const int64_t batch = 8;
  const at::Tensor x = torch::randn({batch, options.in_channels, options.input_size, options.input_size});
  const at::Tensor t = torch::rand({batch});
  const at::Tensor y = torch::randint(options.num_classes, {batch}, torch::kLong);
  for (bool recompute : {false, true}) {
    const auto f = plan_accuracy::figures(
        [&] { return vavae::Dit(options).ptr(); },
        [&](torch::nn::Module& m) { return static_cast<vavae::DitImpl&>(m).forward(x, t, y).pow(2).sum(); },
        [&](bool r) { return options.activation_bytes({batch, 4, r}); }, recompute);
    EXPECT_NEAR(f.ratio(), 1.0, 0.15) << "recompute " << recompute << ": planned " << f.planned / (1 << 20)
                                      << " MB, measured " << f.measured / (1 << 20) << " MB";
  }
}
