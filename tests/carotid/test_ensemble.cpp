// An ensemble is judged as one model: its probabilities are the mean of its
// models', and its loss and predicted class follow from that mean.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>
#include <stdexcept>

#include "metrics/ensemble.h"

namespace {

tandem::EvalRows rows_of(std::vector<double> p1, std::vector<int64_t> labels) {
  std::vector<double> probs;
  for (double p : p1) probs.insert(probs.end(), {1 - p, p});
  const auto n = static_cast<int64_t>(p1.size());
  return {{"prob", torch::tensor(probs, torch::kDouble).view({n, 2})},
          {"label", torch::tensor(labels, torch::kLong)},
          {"loss", torch::zeros({n}, torch::kDouble)},
          {"sample", torch::arange(n, torch::kLong)}};
}

TEST(CarotidEnsemble, MeanOfModelsByHand) {
  // P(1) of three images by two models: (0.9, 0.2, 0.6) and (0.5, 0.4, 0.2).
  const auto a = rows_of({0.9, 0.2, 0.6}, {1, 0, 1});
  const auto b = rows_of({0.5, 0.4, 0.2}, {1, 0, 1});
  const auto mean = carotid::mean_of_models({a, b});
  // Means 0.7, 0.3, 0.4: losses -log 0.7, -log 0.7, -log 0.4; classes 1, 0, 0.
  const auto p1 = mean.at("prob").select(1, 1);
  EXPECT_NEAR(p1[0].item<double>(), 0.7, 1e-12);
  EXPECT_NEAR(p1[1].item<double>(), 0.3, 1e-12);
  EXPECT_NEAR(p1[2].item<double>(), 0.4, 1e-12);
  EXPECT_NEAR(mean.at("loss")[0].item<double>(), -std::log(0.7), 1e-12);
  EXPECT_NEAR(mean.at("loss")[1].item<double>(), -std::log(0.7), 1e-12);
  EXPECT_NEAR(mean.at("loss")[2].item<double>(), -std::log(0.4), 1e-12);
  EXPECT_TRUE(torch::equal(mean.at("pred"), torch::tensor({1, 0, 0}, torch::kLong)));
  EXPECT_TRUE(torch::equal(mean.at("sample"), a.at("sample")));
}

TEST(CarotidEnsemble, OneModelIsItselfAndRowsOfOtherSamplesAreRefused) {
  const auto a = rows_of({0.9, 0.2}, {1, 0});
  const auto one = carotid::mean_of_models({a});
  EXPECT_TRUE(torch::equal(one.at("prob"), a.at("prob")));
  EXPECT_TRUE(torch::equal(one.at("loss"), a.at("loss")));
  auto swapped = a;
  swapped["sample"] = torch::tensor({1, 0}, torch::kLong);
  EXPECT_THROW(carotid::mean_of_models({a, swapped}), std::invalid_argument);
  EXPECT_THROW(carotid::mean_of_models({a, rows_of({0.9, 0.2, 0.1}, {1, 0, 0})}), std::invalid_argument);
  EXPECT_THROW(carotid::mean_of_models({}), std::invalid_argument);
}

}  // namespace
