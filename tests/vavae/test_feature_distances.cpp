// FID, KID and precision/recall (metrics/feature_distances.h) on sets small
// enough to compute by hand; tests/peers/feature_distances_vs_peers.py checks
// them against pytorch-fid, torch-fidelity and clean-fid on larger ones.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <string>

#include "metrics/feature_distances.h"
#include "tandem/io/safetensors.h"

namespace {

at::Tensor column(std::initializer_list<double> values) {
  return torch::tensor(std::vector<double>(values), torch::kDouble).unsqueeze(1);
}

TEST(FeatureStats, MeanAndUnbiasedCovariance) {
  const auto s = vavae::feature_stats(torch::tensor({1.0, 2.0, 3.0, 6.0, 5.0, 10.0}, torch::kDouble).view({3, 2}));
  EXPECT_EQ(s.count, 3);
  EXPECT_TRUE(torch::allclose(s.mean, torch::tensor({3.0, 6.0}, torch::kDouble)));
  // Deviations (-2,-4), (0,0), (2,4): sums of products over N - 1 = 2.
  EXPECT_TRUE(torch::allclose(s.cov, torch::tensor({4.0, 8.0, 8.0, 16.0}, torch::kDouble).view({2, 2})));
  EXPECT_THROW(vavae::feature_stats(torch::ones({1, 4})), std::invalid_argument);
}

TEST(FrechetDistance, OneDimensionIsTheGaussiansClosedForm) {
  // {0, 2}: mean 1, variance 2; {1, 5}: mean 3, variance 8. In one dimension
  // FID = (m1 - m2)^2 + (s1 - s2)^2 = 4 + (sqrt 2 - sqrt 8)^2 = 4 + 2.
  const double fid =
      vavae::frechet_distance(vavae::feature_stats(column({0, 2})), vavae::feature_stats(column({1, 5})));
  EXPECT_NEAR(fid, 6.0, 1e-12);
}

TEST(FrechetDistance, DiagonalCovariancesAddPerFeature) {
  // Independent features: each adds its (m1 - m2)^2 + (s1 - s2)^2.
  vavae::FeatureStats a{torch::tensor({0.0, 1.0}, torch::kDouble),
                        torch::diag(torch::tensor({4.0, 9.0}, torch::kDouble)), 10};
  vavae::FeatureStats b{torch::tensor({3.0, 1.0}, torch::kDouble),
                        torch::diag(torch::tensor({1.0, 16.0}, torch::kDouble)), 10};
  EXPECT_NEAR(vavae::frechet_distance(a, b), 9 + (2 - 1) * (2 - 1) + (3 - 4) * (3 - 4), 1e-12);
}

TEST(FrechetDistance, SameSetIsZeroAndSingularCovarianceIsFinite) {
  torch::manual_seed(3);
  // 5 samples of 16 features: a covariance of rank 4, where scipy's sqrtm
  // needs pytorch-fid's offset.
  const at::Tensor x = torch::randn({5, 16}, torch::kDouble), y = torch::randn({5, 16}, torch::kDouble) + 0.5;
  const auto sx = vavae::feature_stats(x), sy = vavae::feature_stats(y);
  EXPECT_NEAR(vavae::frechet_distance(sx, sx), 0.0, 1e-9);
  const double fid = vavae::frechet_distance(sx, sy);
  EXPECT_TRUE(std::isfinite(fid));
  EXPECT_GT(fid, 16 * 0.25 * 0.5);  // at least most of the shift's 16 x 0.25
  EXPECT_THROW(vavae::frechet_distance(sx, vavae::feature_stats(torch::randn({5, 8}))), std::invalid_argument);
}

TEST(KernelDistance, HandComputedMmd) {
  // x = {0, 1}, y = {1, 2}, D = 1: k(a, b) = (ab + 1)^3. Off-diagonal XX sum
  // 2 k(0,1) = 2, YY 2 k(1,2) = 54, XY k(0,1) + k(0,2) + k(1,1) + k(1,2) =
  // 1 + 1 + 8 + 27 = 37: (2 + 54) / (2 x 1) - 2 x 37 / 4 = 28 - 18.5.
  const auto kid = vavae::kernel_distance(column({0, 1}), column({1, 2}), /*subsets=*/5);
  EXPECT_NEAR(kid.mean, 9.5, 1e-12);
  EXPECT_EQ(kid.std, 0.0);  // every subset is the whole of both sets
  EXPECT_EQ(kid.subset_size, 2);
  EXPECT_EQ(kid.subsets, 5);
}

TEST(KernelDistance, SubsetsOfTheSmallerSetSeeded) {
  torch::manual_seed(4);
  const at::Tensor real = torch::randn({40, 6}), fake = torch::randn({12, 6}) * 1.5;
  const auto a = vavae::kernel_distance(real, fake, 20, 1000, 7), b = vavae::kernel_distance(real, fake, 20, 1000, 7);
  EXPECT_EQ(a.subset_size, 12);
  EXPECT_EQ(a.mean, b.mean);  // the seed fixes the subsets
  EXPECT_GT(a.std, 0.0);      // the real subsets differ
  EXPECT_GT(a.mean, 0.0);
  EXPECT_THROW(vavae::kernel_distance(real, torch::randn({12, 5})), std::invalid_argument);
  EXPECT_THROW(vavae::kernel_distance(real, torch::randn({1, 6})), std::invalid_argument);
}

TEST(PrecisionRecall, HandComputedBalls) {
  // Real 0..4 on a line, k = 1: each real ball has radius 1. Generated
  // {0.5, 10, 11}: 0.5 lies in a real ball, 10 and 11 do not: precision 1/3.
  // Generated balls (k = 1): 0.5 reaches 9.5, 10 and 11 reach 1; every real
  // point lies within 9.5 of 0.5: recall 1.
  const auto pr = vavae::precision_recall(column({0, 1, 2, 3, 4}), column({0.5, 10, 11}), /*k=*/1);
  EXPECT_NEAR(pr.precision, 1.0 / 3, 1e-12);
  EXPECT_EQ(pr.recall, 1.0);
  // On the ball's edge counts as inside (<=, the reference implementation's).
  EXPECT_EQ(vavae::precision_recall(column({0, 1, 2}), column({3, 7}), 1).precision, 0.5);
  EXPECT_THROW(vavae::precision_recall(column({0, 1, 2}), column({3, 7}), 3), std::invalid_argument);
}

// Run by tests/peers/feature_distances_vs_peers.py: reads DIR/features.safetensors
// (real, fake: float64, and real32, fake32: the same in float32) and writes
// each figure to DIR/figures.txt.
TEST(FeatureDistancesPeer, WritesItsFigures) {
  const char* env = std::getenv("TANDEM_PEER_FEATURES_DIR");
  if (!env) GTEST_SKIP() << "run by tests/peers/feature_distances_vs_peers.py";
  const std::string dir = env;
  std::map<std::string, at::Tensor> t;
  for (const auto& [name, tensor] : tandem::read_safetensors(dir + "/features.safetensors")) t[name] = tensor;
  const auto kid = vavae::kernel_distance(t["real"], t["fake"], 3, 100000);
  const auto pr = vavae::precision_recall(t["real32"], t["fake32"]);
  std::ofstream out(dir + "/figures.txt");
  out.precision(17);
  out << vavae::frechet_distance(vavae::feature_stats(t["real"]), vavae::feature_stats(t["fake"])) << "\n"
      << kid.mean << "\n"
      << kid.std << "\n"
      << pr.precision << "\n"
      << pr.recall << "\n"
      << vavae::frechet_distance(vavae::feature_stats(t["few_real"]), vavae::feature_stats(t["few_fake"])) << "\n";
}

}  // namespace
