// Classification metrics against values worked out by hand.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "metrics/classifier_metrics.h"

namespace {

using carotid::aggregate_by_person;
using carotid::binary_metrics;
using carotid::multiclass_metrics;
using carotid::roc_auc;
using Labels = std::vector<int64_t>;
using Probs = std::vector<double>;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

TEST(RocAuc, CountsPairsRankedRight) {
  // Positives 0.35 and 0.8 against negatives 0.1 and 0.4: 3 of 4 pairs.
  EXPECT_DOUBLE_EQ(roc_auc({0.1, 0.4, 0.35, 0.8}, {0, 0, 1, 1}), 0.75);
  EXPECT_DOUBLE_EQ(roc_auc({0.1, 0.2, 0.8, 0.9}, {0, 0, 1, 1}), 1.0);
  EXPECT_DOUBLE_EQ(roc_auc({0.9, 0.8, 0.2, 0.1}, {0, 0, 1, 1}), 0.0);
}

TEST(RocAuc, TiesCountOneHalf) {
  EXPECT_DOUBLE_EQ(roc_auc({0.5, 0.5, 0.5, 0.5}, {0, 1, 0, 1}), 0.5);
  // 0.6 (pos) vs 0.2: 1, vs 0.6 (neg): 1/2; 0.9 vs both: 2. 3.5 of 4.
  EXPECT_DOUBLE_EQ(roc_auc({0.2, 0.6, 0.6, 0.9}, {0, 0, 1, 1}), 0.875);
  // Ties across many: pos {0.3, 0.3, 0.7}, neg {0.3, 0.1}:
  // 0.3 vs 0.3 = 1/2, vs 0.1 = 1 (twice) and 0.7 beats both: 5 of 6.
  EXPECT_DOUBLE_EQ(roc_auc({0.3, 0.3, 0.7, 0.3, 0.1}, {1, 1, 1, 0, 0}), 5.0 / 6.0);
}

TEST(RocAuc, UndefinedForOneClassOrNaN) {
  EXPECT_TRUE(std::isnan(roc_auc({0.1, 0.9}, {1, 1})));
  EXPECT_TRUE(std::isnan(roc_auc({0.1, 0.9}, {0, 0})));
  EXPECT_TRUE(std::isnan(roc_auc({0.1, kNaN, 0.9}, {0, 1, 1})));
}

TEST(BinaryMetrics, HandComputed) {
  const Probs p = {0.1, 0.4, 0.35, 0.8, 0.6, 0.5};
  const Labels y = {0, 0, 1, 1, 0, 1};
  const auto m = binary_metrics(p, y);
  // Predicted positive (p >= 0.5): 0.8, 0.6, 0.5.
  EXPECT_EQ(m.count, 6);
  EXPECT_EQ(m.tp, 2);
  EXPECT_EQ(m.fn, 1);
  EXPECT_EQ(m.fp, 1);
  EXPECT_EQ(m.tn, 2);
  EXPECT_DOUBLE_EQ(m.accuracy, 4.0 / 6.0);
  EXPECT_DOUBLE_EQ(m.precision, 2.0 / 3.0);
  EXPECT_DOUBLE_EQ(m.sensitivity, 2.0 / 3.0);
  EXPECT_DOUBLE_EQ(m.specificity, 2.0 / 3.0);
  EXPECT_DOUBLE_EQ(m.f1, 2.0 / 3.0);
  EXPECT_DOUBLE_EQ(m.balanced_accuracy, 2.0 / 3.0);
  const double loss =
      -(std::log(0.9) + std::log(0.6) + std::log(0.35) + std::log(0.8) + std::log(0.4) + std::log(0.5)) / 6.0;
  EXPECT_NEAR(m.loss, loss, 1e-12);
  // Positives {0.35, 0.8, 0.5} vs negatives {0.1, 0.4, 0.6}: 1 + 3 + 2 of 9.
  EXPECT_DOUBLE_EQ(m.auc, 6.0 / 9.0);
}

TEST(BinaryMetrics, UnevenCounts) {
  // tp 3, fn 1, fp 2, tn 4.
  const auto m = binary_metrics({0.9, 0.8, 0.7, 0.2, 0.6, 0.55, 0.1, 0.2, 0.3, 0.4}, {1, 1, 1, 1, 0, 0, 0, 0, 0, 0});
  EXPECT_EQ(m.tp, 3);
  EXPECT_EQ(m.fn, 1);
  EXPECT_EQ(m.fp, 2);
  EXPECT_EQ(m.tn, 4);
  EXPECT_DOUBLE_EQ(m.precision, 3.0 / 5.0);
  EXPECT_DOUBLE_EQ(m.sensitivity, 3.0 / 4.0);
  EXPECT_DOUBLE_EQ(m.specificity, 4.0 / 6.0);
  EXPECT_DOUBLE_EQ(m.f1, 2 * 0.6 * 0.75 / 1.35);
  EXPECT_DOUBLE_EQ(m.balanced_accuracy, (0.75 + 4.0 / 6.0) / 2);
  EXPECT_DOUBLE_EQ(m.accuracy, 0.7);
}

TEST(BinaryMetrics, ThresholdIsInclusiveAndAdjustable) {
  EXPECT_EQ(binary_metrics({0.5}, {1}).tp, 1);
  EXPECT_EQ(binary_metrics({0.5}, {1}, 0.6).fn, 1);
}

TEST(BinaryMetrics, ConfidentMistakesGiveLargeFiniteLoss) {
  const auto m = binary_metrics({0.0, 1.0}, {1, 0});
  EXPECT_NEAR(m.loss, -std::log(carotid::kProbabilityEpsilon), 1e-9);
  EXPECT_NEAR(binary_metrics({1.0, 0.0}, {1, 0}).loss, 0.0, 1e-6);
}

TEST(BinaryMetrics, OneClassOnly) {
  const auto m = binary_metrics({0.9, 0.2, 0.7}, {1, 1, 1});
  EXPECT_TRUE(std::isnan(m.auc));
  EXPECT_EQ(m.tp, 2);
  EXPECT_EQ(m.fn, 1);
  EXPECT_DOUBLE_EQ(m.sensitivity, 2.0 / 3.0);
  EXPECT_DOUBLE_EQ(m.specificity, 0.0);              // no negatives
  EXPECT_DOUBLE_EQ(m.balanced_accuracy, 2.0 / 3.0);  // the recall of the class present
  const auto negatives = binary_metrics({0.1, 0.2}, {0, 0});
  EXPECT_DOUBLE_EQ(negatives.precision, 0.0);  // nothing predicted positive
  EXPECT_DOUBLE_EQ(negatives.sensitivity, 0.0);
  EXPECT_DOUBLE_EQ(negatives.f1, 0.0);
  EXPECT_DOUBLE_EQ(negatives.balanced_accuracy, 1.0);
}

TEST(BinaryMetrics, NaNProbabilitiesPoisonLossAndAucButCount) {
  const auto m = binary_metrics({kNaN, 0.9, 0.1}, {1, 1, 0});
  EXPECT_TRUE(std::isnan(m.loss));
  EXPECT_TRUE(std::isnan(m.auc));
  EXPECT_EQ(m.fn, 1);  // NaN is predicted negative
  EXPECT_EQ(m.tp, 1);
}

TEST(BinaryMetrics, BadInputIsRefused) {
  EXPECT_THROW(binary_metrics({}, {}), std::invalid_argument);
  EXPECT_THROW(binary_metrics({0.5, 0.5}, {1}), std::invalid_argument);
  EXPECT_THROW(binary_metrics({0.5}, {2}), std::invalid_argument);
  EXPECT_THROW(binary_metrics({1.5}, {1}), std::invalid_argument);  // a logit
  EXPECT_THROW(binary_metrics({-0.1}, {1}), std::invalid_argument);
}

TEST(BinaryMetrics, NamedValuesForLogs) {
  const auto named = binary_metrics({0.1, 0.9}, {0, 1}).named();
  ASSERT_GE(named.size(), 8u);
  EXPECT_EQ(named[0].first, "loss");
  EXPECT_EQ(named[7].first, "auc");
  EXPECT_DOUBLE_EQ(named[7].second, 1.0);
}

TEST(MulticlassMetrics, HandComputed) {
  const std::vector<Probs> p = {
      {0.7, 0.2, 0.1},  // 0 -> 0
      {0.1, 0.8, 0.1},  // 1 -> 1
      {0.2, 0.3, 0.5},  // 2 -> 2
      {0.5, 0.4, 0.1},  // 1 -> 0
      {0.3, 0.3, 0.4},  // 0 -> 2
      {0.4, 0.4, 0.2},  // 1 -> 0 (a tie goes to the lower class)
  };
  const Labels y = {0, 1, 2, 1, 0, 1};
  const auto m = multiclass_metrics(p, y, 3);
  EXPECT_EQ(m.confusion, (std::vector<std::vector<int64_t>>{{1, 0, 1}, {2, 1, 0}, {0, 0, 1}}));
  EXPECT_DOUBLE_EQ(m.accuracy, 0.5);
  EXPECT_DOUBLE_EQ(m.balanced_accuracy, (0.5 + 1.0 / 3.0 + 1.0) / 3.0);
  const double loss =
      -(std::log(0.7) + std::log(0.8) + std::log(0.5) + std::log(0.4) + std::log(0.3) + std::log(0.4)) / 6.0;
  EXPECT_NEAR(m.loss, loss, 1e-12);
  // Class 0 vs rest: positives {0.7, 0.3} over negatives {0.1, 0.2, 0.5, 0.4}: 4 + 2 of 8.
  ASSERT_EQ(m.auc_per_class.size(), 3u);
  EXPECT_DOUBLE_EQ(m.auc_per_class[0], 0.75);
  EXPECT_DOUBLE_EQ(m.auc_per_class[1], 1.0);
  EXPECT_DOUBLE_EQ(m.auc_per_class[2], 1.0);
  EXPECT_DOUBLE_EQ(m.macro_auc, (0.75 + 1.0 + 1.0) / 3.0);
}

TEST(MulticlassMetrics, AbsentClassesAreLeftOutOfTheAverages) {
  const auto m = multiclass_metrics({{0.8, 0.1, 0.1}, {0.3, 0.6, 0.1}, {0.6, 0.3, 0.1}}, {0, 1, 1}, 3);
  EXPECT_TRUE(std::isnan(m.auc_per_class[2]));
  EXPECT_DOUBLE_EQ(m.auc_per_class[0], 1.0);
  EXPECT_DOUBLE_EQ(m.auc_per_class[1], 1.0);
  EXPECT_DOUBLE_EQ(m.macro_auc, 1.0);
  EXPECT_DOUBLE_EQ(m.balanced_accuracy, (1.0 + 0.5) / 2.0);
  EXPECT_TRUE(std::isnan(multiclass_metrics({{0.5, 0.5}}, {0}, 2).macro_auc));
}

TEST(MulticlassMetrics, BadInputIsRefused) {
  EXPECT_THROW(multiclass_metrics({{0.5, 0.5}}, {0}, 3), std::invalid_argument);  // width
  EXPECT_THROW(multiclass_metrics({{0.5, 0.5}}, {2}, 2), std::invalid_argument);  // label
  EXPECT_THROW(multiclass_metrics({}, {}, 2), std::invalid_argument);
  EXPECT_THROW(multiclass_metrics({{1.0}}, {0}, 1), std::invalid_argument);
}

TEST(PersonAggregation, MeanOfEachPersonsImages) {
  // A: 0.2, 0.4 -> 0.3; C: 0.6, 0.8, 0.7 -> 0.7; B: 0.9.
  const auto scores =
      aggregate_by_person({"A", "C", "B", "A", "C", "C"}, Probs{0.2, 0.6, 0.9, 0.4, 0.8, 0.7}, {0, 0, 1, 0, 0, 0});
  EXPECT_EQ(scores.persons, (std::vector<std::string>{"A", "C", "B"}));
  EXPECT_EQ(scores.labels, (Labels{0, 0, 1}));
  EXPECT_EQ(scores.image_counts, (Labels{2, 3, 1}));
  const Probs positive = scores.positive();
  ASSERT_EQ(positive.size(), 3u);
  EXPECT_NEAR(positive[0], 0.3, 1e-12);
  EXPECT_NEAR(positive[1], 0.7, 1e-12);
  EXPECT_NEAR(positive[2], 0.9, 1e-12);
  EXPECT_NEAR(scores.probs[0][0], 0.7, 1e-12);

  // Person-level metrics differ from image-level ones: three persons, not six images.
  const auto m = binary_metrics(positive, scores.labels);
  EXPECT_EQ(m.count, 3);
  EXPECT_EQ(m.fp, 1);  // C
  EXPECT_DOUBLE_EQ(m.auc, 1.0);
}

TEST(PersonAggregation, MulticlassRowsAndConflictingLabels) {
  const auto scores = aggregate_by_person({"A", "A"}, std::vector<Probs>{{0.2, 0.3, 0.5}, {0.4, 0.5, 0.1}}, {2, 2});
  ASSERT_EQ(scores.probs.size(), 1u);
  EXPECT_NEAR(scores.probs[0][0], 0.3, 1e-12);
  EXPECT_NEAR(scores.probs[0][1], 0.4, 1e-12);
  EXPECT_NEAR(scores.probs[0][2], 0.3, 1e-12);
  EXPECT_THROW(aggregate_by_person({"A", "A"}, Probs{0.1, 0.2}, {0, 1}), std::invalid_argument);
  EXPECT_THROW(aggregate_by_person({"A"}, Probs{0.1, 0.2}, {0, 0}), std::invalid_argument);
}

}  // namespace
