#include "metrics/roc_curve.h"

#include <gtest/gtest.h>

#include "metrics/classifier_metrics.h"

namespace carotid {
namespace {

TEST(RocCurve, PointsByHand) {
  // Scores 0.9 (pos), 0.8 (neg), 0.8 (pos), 0.3 (neg): the tie at 0.8 moves
  // both rates in one step.
  const auto curve = roc_curve({0.9, 0.8, 0.8, 0.3}, {1, 0, 1, 0});
  ASSERT_EQ(curve.size(), 4u);
  EXPECT_DOUBLE_EQ(curve[0].fpr, 0);
  EXPECT_DOUBLE_EQ(curve[0].tpr, 0);
  EXPECT_DOUBLE_EQ(curve[0].threshold, 1.9);
  EXPECT_DOUBLE_EQ(curve[1].fpr, 0);
  EXPECT_DOUBLE_EQ(curve[1].tpr, 0.5);
  EXPECT_DOUBLE_EQ(curve[2].fpr, 0.5);
  EXPECT_DOUBLE_EQ(curve[2].tpr, 1);
  EXPECT_DOUBLE_EQ(curve[2].threshold, 0.8);
  EXPECT_DOUBLE_EQ(curve[3].fpr, 1);
  EXPECT_DOUBLE_EQ(curve[3].tpr, 1);
  // Area: 0.5 * 0.5 (first trapezoid, 0.5..1 high) + 0.5 * 1 = 0.875,
  // which is Mann-Whitney's (1 + 1 + 0.5 + 1) / 4.
  EXPECT_DOUBLE_EQ(area_under(curve), 0.875);
  EXPECT_DOUBLE_EQ(area_under(curve), roc_auc({0.9, 0.8, 0.8, 0.3}, {1, 0, 1, 0}));
}

TEST(RocCurve, NeedsBothClasses) {
  EXPECT_THROW(roc_curve({0.1, 0.2}, {1, 1}), std::invalid_argument);
  EXPECT_THROW(roc_curve({0.1, 0.2}, {1}), std::invalid_argument);
}

}  // namespace
}  // namespace carotid
