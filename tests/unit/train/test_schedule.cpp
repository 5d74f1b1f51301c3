#include <gtest/gtest.h>

#include <string>

#include "tandem/error.h"
#include "tandem/train/schedule.h"
#include "../test_support.h"

namespace {

using tandem::Schedule;

std::string validate_error(const Schedule& schedule) {
  return tandem::testing::message_of<tandem::UsageError>([&] { schedule.validate(); });
}

// nanoGPT's defaults: lr 6e-4 down to 6e-5, here with 10 warmup steps of 100.
TEST(TrainSchedule, CosineWarmsUpThenDecaysToMinLr) {
  const Schedule s{"cosine", 6e-4, 6e-5, 10, 100};
  s.validate();
  EXPECT_DOUBLE_EQ(s.at(0), 6e-4 * 1 / 11);
  EXPECT_DOUBLE_EQ(s.at(9), 6e-4 * 10 / 11);
  EXPECT_DOUBLE_EQ(s.at(10), 6e-4);
  EXPECT_DOUBLE_EQ(s.at(55), 3.3e-4);  // halfway: min + (lr - min) / 2
  EXPECT_DOUBLE_EQ(s.at(100), 6e-5);
  EXPECT_DOUBLE_EQ(s.at(5000), 6e-5);
}

TEST(TrainSchedule, CosineAtAQuarter) {
  const Schedule s{"cosine", 1.0, 0.0, 0, 100};
  EXPECT_NEAR(s.at(25), 0.8535533905932737, 1e-15);  // (1 + cos(pi/4)) / 2
  EXPECT_NEAR(s.at(75), 0.1464466094067262, 1e-15);
}

TEST(TrainSchedule, LinearFallsInAStraightLine) {
  const Schedule s{"linear", 1.0, 0.1, 0, 100};
  s.validate();
  EXPECT_DOUBLE_EQ(s.at(0), 1.0);
  EXPECT_DOUBLE_EQ(s.at(25), 0.775);
  EXPECT_DOUBLE_EQ(s.at(50), 0.55);
  EXPECT_DOUBLE_EQ(s.at(100), 0.1);
  EXPECT_DOUBLE_EQ(s.at(101), 0.1);
}

TEST(TrainSchedule, ConstantHoldsAfterWarmup) {
  const Schedule s{"constant", 2e-3, 0.0, 4, 10};
  s.validate();
  EXPECT_DOUBLE_EQ(s.at(0), 2e-3 / 5);
  EXPECT_DOUBLE_EQ(s.at(3), 2e-3 * 4 / 5);
  EXPECT_DOUBLE_EQ(s.at(4), 2e-3);
  EXPECT_DOUBLE_EQ(s.at(10000), 2e-3);
}

TEST(TrainSchedule, ValidateNamesTheKeyAtFault) {
  EXPECT_EQ(validate_error({"step", 1e-3, 0.0, 0, 10}),
            "train.schedule must be one of constant|cosine|linear, got \"step\"");
  EXPECT_EQ(validate_error({"cosine", 0.0, 0.0, 0, 10}), "train.lr must be a positive number, got 0");
  EXPECT_EQ(validate_error({"cosine", 1e-3, -1e-4, 0, 10}), "train.min_lr must be 0 or more, got -0.0001");
  EXPECT_EQ(validate_error({"linear", 1e-3, 1e-2, 0, 10}),
            "train.min_lr (0.01) must not exceed train.lr (0.001) for a linear schedule");
  EXPECT_EQ(validate_error({"cosine", 1e-3, 0.0, -1, 10}), "train.warmup_steps must be 0 or more, got -1");
  EXPECT_EQ(validate_error({"cosine", 1e-3, 0.0, 10, 10}),
            "train.warmup_steps (10) must be less than the run's total steps (10)");
}

TEST(TrainSchedule, ConstantIgnoresMinLr) {
  const Schedule s{"constant", 1e-3, 1.0, 0, 10};
  s.validate();
  EXPECT_DOUBLE_EQ(s.at(20), 1e-3);
}

}  // namespace
