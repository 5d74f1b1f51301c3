// evaluate's FID, KID and precision/recall report (apps/vavae/app/distance_report.h):
// which figures its counts support, per user, and what the JSON says.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <algorithm>

#include "app/distance_report.h"

namespace {

at::Tensor features(int64_t n, double shift) { return torch::randn({n, 2}, torch::kDouble) + shift; }

// With 2 features: FID needs 3 images a side, precision and recall 4 (k = 3), KID 2.
TEST(DistanceReport, GivesEachFigureTheCountsSupportIt) {
  torch::manual_seed(1);
  const at::Tensor real = features(6, 0), four = features(4, 1);
  const auto all = vavae::distance_figures(real, four, 1000);
  ASSERT_TRUE(all.fid && all.kid && all.precision_recall);
  EXPECT_TRUE(all.skipped.empty());
  EXPECT_DOUBLE_EQ(*all.fid, vavae::frechet_distance(vavae::feature_stats(real), vavae::feature_stats(four)));
  EXPECT_EQ(all.kid->subset_size, 4) << "subsets shrink to the smaller set";

  const auto three = vavae::distance_figures(real, four.narrow(0, 0, 3), 1000);
  EXPECT_TRUE(three.fid && three.kid);
  EXPECT_FALSE(three.precision_recall);
  ASSERT_EQ(three.skipped.size(), 1u);
  EXPECT_EQ(three.skipped[0], "precision, recall: 6 real and 3 generated images, they need more than 3 on each side");

  const auto two = vavae::distance_figures(real, four.narrow(0, 0, 2), 1000);
  EXPECT_FALSE(two.fid);
  EXPECT_TRUE(two.kid);
  EXPECT_EQ(two.skipped[0],
            "fid: 6 real and 2 generated images, FID needs more than the 2 features on each side (read kid_mean)");

  const auto one = vavae::distance_figures(real, four.narrow(0, 0, 1), 1000);
  EXPECT_FALSE(one.fid || one.kid || one.precision_recall);
  EXPECT_EQ(one.skipped.size(), 3u);
}

// What train-dit announces before training is what each evaluation gives.
TEST(DistanceReport, SupportedFiguresAreTheOnesGiven) {
  using Names = std::vector<std::string>;
  EXPECT_EQ(vavae::supported_figures(6, 4, 2), (Names{"fid", "kid_mean", "precision", "recall"}));
  EXPECT_EQ(vavae::supported_figures(6, 3, 2), (Names{"fid", "kid_mean"}));
  EXPECT_EQ(vavae::supported_figures(6, 2, 2), (Names{"kid_mean"}));
  EXPECT_EQ(vavae::supported_figures(6, 1, 2), Names{});
  EXPECT_EQ(vavae::supported_figures(3000, 200, 2048), (Names{"kid_mean", "precision", "recall"}));
  torch::manual_seed(4);
  const at::Tensor real = features(6, 0);
  for (int64_t n : {1, 2, 3, 4}) {
    std::vector<std::string> given;
    for (const auto& [name, value] : vavae::distance_figures(real, features(n, 1), 1000).scalars())
      if (name != "kid_std") given.push_back(name);
    Names wanted = vavae::supported_figures(6, n, 2);
    std::sort(wanted.begin(), wanted.end());
    EXPECT_EQ(given, wanted) << n << " generated";
  }
}

// The radii are computed a block of 1024 rows at a time: the same as from
// the whole distance matrix.
TEST(DistanceReport, RadiiByBlocksAreTheWholeMatrixs) {
  torch::manual_seed(5);
  const at::Tensor x = torch::randn({1500, 8});
  const at::Tensor whole = std::get<0>(torch::cdist(x, x).kthvalue(4, 1));
  EXPECT_TRUE(torch::allclose(vavae::knn_radii(x, 3), whole, 1e-5, 1e-6));
}

TEST(DistanceReport, ReportsEachUserOnItsOwnImages) {
  torch::manual_seed(2);
  vavae::ImageFeatures real{features(12, 0), torch::tensor({1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 3, 3})};
  vavae::ImageFeatures generated{features(8, 0.5), torch::tensor({2, 1, 2, 1, 2, 1, 2, 1})};
  const vavae::DistanceReport report = vavae::distance_report(real, generated);
  EXPECT_EQ(report.overall.real, 12);
  EXPECT_EQ(report.overall.generated, 8);
  EXPECT_EQ(report.overall.kid->subset_size, 8);
  ASSERT_EQ(report.per_user.size(), 2u) << "users with generated images only";
  const auto& one = report.per_user.at(1);
  EXPECT_EQ(one.real, 5);
  EXPECT_EQ(one.generated, 4);
  const at::Tensor mine = generated.features.index({generated.users == 1});
  const auto kid = vavae::kernel_distance(real.features.narrow(0, 0, 5), mine, 100, vavae::kKidUserSubsetSize);
  EXPECT_DOUBLE_EQ(one.kid->mean, kid.mean);
  EXPECT_DOUBLE_EQ(*one.fid, vavae::frechet_distance(vavae::feature_stats(real.features.narrow(0, 0, 5)),
                                                     vavae::feature_stats(mine)));
}

TEST(DistanceReport, WritesAbsentFiguresAsNullWithTheReason) {
  torch::manual_seed(3);
  const auto figures = vavae::distance_figures(features(6, 0), features(2, 1), 1000);
  const nlohmann::json j = figures.to_json();
  EXPECT_TRUE(j.at("fid").is_null());
  EXPECT_TRUE(j.at("precision").is_null() && j.at("recall").is_null());
  EXPECT_TRUE(j.at("kid_mean").is_number() && j.at("kid_std").is_number());
  EXPECT_EQ(j.at("kid_subset_size"), 2);
  EXPECT_EQ(j.at("skipped").size(), 2u);
  EXPECT_EQ(figures.scalars().count("fid"), 0u);
  EXPECT_EQ(figures.scalars().count("kid_mean"), 1u);
  EXPECT_EQ(figures.summary().rfind("FID -, KID ", 0), 0u) << figures.summary();
  EXPECT_NE(figures.summary().find("precision -, recall - (6 real training and 2 generated images)"), std::string::npos)
      << figures.summary();
}

}  // namespace
