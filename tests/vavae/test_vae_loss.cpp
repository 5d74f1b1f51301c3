#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>
#include <limits>
#include <stdexcept>

#include "model/posterior.h"
#include "model/vae.h"
#include "model/vae_loss.h"
#include "tandem/train/autocast_guard.h"

namespace {

// Positions as columns: [1, C, 1, positions].
at::Tensor positions(std::initializer_list<std::initializer_list<double>> vectors) {
  std::vector<at::Tensor> columns;
  for (const auto& v : vectors) columns.push_back(torch::tensor(std::vector<double>(v)).to(torch::kFloat));
  return torch::stack(columns, 1)
      .reshape({1, static_cast<int64_t>(vectors.begin()->size()), 1, static_cast<int64_t>(vectors.size())});
}

TEST(VavaeVaeLoss, ReconstructionAndKlReductions) {
  const at::Tensor images = torch::zeros({2, 1, 1, 2});
  const at::Tensor reconstruction = torch::tensor({0.5, -0.5, 1.0, 0.0}).reshape({2, 1, 1, 2});
  // mean 1, logvar 0: KL 0.5 per element, 1 per sample.
  const vavae::Posterior posterior{torch::ones({2, 1, 1, 2}), torch::zeros({2, 1, 1, 2})};
  const auto terms = vavae::vae_loss(images, reconstruction, posterior, 0.25);
  EXPECT_NEAR(terms.reconstruction.item<double>(), 2.0 / 2, 1e-6);  // sum |x - x_rec| = 2 over 2 samples
  EXPECT_NEAR(terms.kl.item<double>(), 2.0 / 2, 1e-6);
  EXPECT_NEAR(terms.total.item<double>(), 1.0 + 0.25 * 1.0, 1e-6);
  EXPECT_NEAR(terms.l1_per_pixel.item<double>(), 2.0 / 4, 1e-6);
}

TEST(VavaeVaeLoss, CosineMarginByHand) {
  const at::Tensor z = positions({{1, 0}, {1, 0}, {2, 0}});
  // cos 1 -> 0; cos 0 -> relu(1 - 0.5 - 0) = 0.5; cos -1 -> 1.5
  const at::Tensor f = positions({{3, 0}, {0, 1}, {-1, 0}});
  EXPECT_NEAR(vavae::vf_cosine_margin_loss(z, f).item<double>(), (0.0 + 0.5 + 1.5) / 3, 1e-6);
  // Margin 0: cos 1 -> 0, cos 0 -> 1, cos -1 -> 2
  EXPECT_NEAR(vavae::vf_cosine_margin_loss(z, f, 0.0).item<double>(), 1.0, 1e-6);
}

TEST(VavaeVaeLoss, DistanceMatrixByHand) {
  // S(z) = [[1, 0], [0, 1]]; S(f) = [[1, 1], [1, 1]]; |diff| - 0.25 = 0.75 off the diagonal.
  const at::Tensor z = positions({{1, 0}, {0, 2}});
  const at::Tensor f = positions({{1, 0}, {3, 0}});
  EXPECT_NEAR(vavae::vf_distance_matrix_loss(z, f).item<double>(), (0.75 + 0.75) / 4, 1e-6);
  // Within the margin, nothing.
  EXPECT_NEAR(vavae::vf_distance_matrix_loss(z, z * 5).item<double>(), 0.0, 1e-6);
  EXPECT_THROW(vavae::vf_distance_matrix_loss(z, torch::zeros({1, 3, 1, 2})), std::invalid_argument);
}

TEST(VavaeVaeLoss, AdaptiveWeightIsRatioOfGradientNorms) {
  const at::Tensor w = torch::tensor({1.0, 2.0}).set_requires_grad(true);
  const at::Tensor rec = (w * torch::tensor({3.0, 4.0})).sum();  // gradient [3, 4], norm 5
  const at::Tensor vf = (w * w).sum();                           // gradient 2w = [2, 4], norm sqrt(20)
  const at::Tensor weight = vavae::adaptive_weight(rec, vf, w);
  EXPECT_NEAR(weight.item<double>(), 5.0 / (std::sqrt(20.0) + 1e-4), 1e-6);
  EXPECT_FALSE(weight.requires_grad());
  // The graphs are kept for the backward of the total.
  (rec + weight * vf).backward();
  EXPECT_TRUE(
      torch::allclose(w.grad(), torch::tensor({3.0 + 2.0 * weight.item<double>(), 4.0 + 4.0 * weight.item<double>()})));

  // A VF gradient near zero: 5 / 1e-4 = 5e4, clamped.
  const at::Tensor w2 = torch::tensor({1.0, 2.0}).set_requires_grad(true);
  const at::Tensor rec2 = (w2 * torch::tensor({3.0, 4.0})).sum();
  EXPECT_NEAR(vavae::adaptive_weight(rec2, 1e-12 * w2.sum(), w2).item<double>(), 1e4, 1e-3);
  EXPECT_NEAR(vavae::adaptive_weight(rec2, 1e-12 * w2.sum(), w2, 1e8).item<double>(),
              5.0 / (1e-4 + std::sqrt(2.0) * 1e-12), 1e-2);

  // A loss that does not reach the layer is an error, not a silent 1e4.
  const at::Tensor other = torch::ones({2}).set_requires_grad(true);
  EXPECT_THROW(vavae::adaptive_weight(rec2, (other * other).sum(), w2), std::invalid_argument);
}

TEST(VavaeVaeLoss, AdaptiveWeightOfGradientsBeyondHalfRangeIsTheFp32One) {
  // Gradient elements of 1e6 overflow fp16 (65504) and 1e-6 lies in its
  // subnormals; at the fp32 weight they are exact, and so is the ratio.
  const at::Tensor w = torch::ones({64}).set_requires_grad(true);
  const at::Tensor weight = vavae::adaptive_weight((w * 1e6).sum(), (w * 1e-6).sum(), w, 1e12);
  ASSERT_TRUE(std::isfinite(weight.item<double>()));
  EXPECT_NEAR(weight.item<double>(), 8e6 / (8e-6 + 1e-4), 1e-6 * 8e6 / (8e-6 + 1e-4));
}

TEST(VavaeVaeLoss, ANonFiniteOrZeroNormKeepsTheLastFiniteWeight) {
  const double inf = std::numeric_limits<double>::infinity();
  const auto norm = [](double v) { return torch::tensor(v, torch::kDouble); };
  vavae::AdaptiveWeight weigh(1e8);
  // None yet: the VF term sits the step out.
  EXPECT_EQ(weigh.from_norms(norm(inf), norm(1.0)).item<double>(), 0.0);
  const double good = weigh.from_norms(norm(2.0), norm(1.0)).item<double>();
  EXPECT_NEAR(good, 2.0 / (1.0 + 1e-4), 1e-6);
  // inf / inf (both sides overflowed), a NaN, a VF gradient flushed to zero.
  EXPECT_EQ(weigh.from_norms(norm(inf), norm(inf)).item<double>(), good);
  EXPECT_EQ(weigh.from_norms(norm(std::nan("")), norm(1.0)).item<double>(), good);
  EXPECT_EQ(weigh.from_norms(norm(3.0), norm(0.0)).item<double>(), good);
  EXPECT_EQ(weigh.kept(), 4);
  EXPECT_NEAR(weigh.from_norms(norm(5.0), norm(1.0)).item<double>(), 5.0 / (1.0 + 1e-4), 1e-6);
}

TEST(VavaeVaeLoss, TheEncodersLastLayerComputesInFp32UnderAutocast) {
  // Its weight's gradient is the adaptive weight's numerator: a half
  // convolution's backward would sum it into infinity.
  torch::manual_seed(0);
  vavae::Vae vae(vavae::VaeOptions::preset("tiny"));
  tandem::AutocastGuard autocast(tandem::Precision::BF16, /*cuda=*/false);
  const at::Tensor moments = vae->encoder->forward(torch::rand({1, 3, 32, 32}));
  EXPECT_EQ(moments.scalar_type(), at::kFloat);
}

}  // namespace
