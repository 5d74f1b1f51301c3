#include <gtest/gtest.h>
#include <torch/torch.h>

#include <string>
#include <vector>

#include "tandem/error.h"
#include "tandem/train/loss_scaler.h"
#include "../test_support.h"

namespace {

using tandem::CheckpointState;
using tandem::LossScaler;
using tandem::LossScalerOptions;

LossScalerOptions every(int64_t growth_interval) {
  LossScalerOptions options;
  options.growth_interval = growth_interval;
  return options;
}

TEST(TrainLossScaler, StartsAt65536) {
  const LossScaler scaler(true);
  EXPECT_EQ(scaler.scale(), 65536.0);
  EXPECT_EQ(scaler.skipped(), 0);
}

TEST(TrainLossScaler, OverflowHalvesAndSkips) {
  LossScaler scaler(true);
  EXPECT_FALSE(scaler.update(false));
  EXPECT_EQ(scaler.scale(), 32768.0);
  EXPECT_FALSE(scaler.update(false));
  EXPECT_EQ(scaler.scale(), 16384.0);
  EXPECT_TRUE(scaler.update(true));
  EXPECT_EQ(scaler.scale(), 16384.0);
  EXPECT_EQ(scaler.skipped(), 2);
}

TEST(TrainLossScaler, DoublesAfterAnIntervalOfGoodSteps) {
  LossScaler scaler(true, every(3));
  EXPECT_TRUE(scaler.update(true));
  EXPECT_TRUE(scaler.update(true));
  EXPECT_EQ(scaler.scale(), 65536.0);
  EXPECT_TRUE(scaler.update(true));
  EXPECT_EQ(scaler.scale(), 131072.0);

  // An overflow restarts the count.
  EXPECT_TRUE(scaler.update(true));
  EXPECT_TRUE(scaler.update(true));
  EXPECT_FALSE(scaler.update(false));
  EXPECT_EQ(scaler.scale(), 65536.0);
  EXPECT_TRUE(scaler.update(true));
  EXPECT_TRUE(scaler.update(true));
  EXPECT_EQ(scaler.scale(), 65536.0);
  EXPECT_TRUE(scaler.update(true));
  EXPECT_EQ(scaler.scale(), 131072.0);
}

TEST(TrainLossScaler, DisabledIsScaleOneAndNeverSkips) {
  LossScaler scaler(false);
  EXPECT_EQ(scaler.scale(), 1.0);
  EXPECT_TRUE(scaler.update(false));
  EXPECT_EQ(scaler.scale(), 1.0);
  EXPECT_EQ(scaler.skipped(), 0);
}

TEST(TrainLossScaler, StateRoundTrips) {
  LossScaler first(true, every(4));
  first.update(false);
  first.update(true);
  first.update(true);
  const CheckpointState state = first.state();
  EXPECT_EQ(std::get<double>(state.at("loss_scale")), 32768.0);
  EXPECT_EQ(std::get<int64_t>(state.at("loss_scale_good_steps")), 2);
  EXPECT_EQ(std::get<int64_t>(state.at("loss_scale_skipped")), 1);

  LossScaler second(true, every(4));
  second.load_state(state);
  EXPECT_EQ(second.scale(), 32768.0);
  EXPECT_EQ(second.skipped(), 1);
  // Two more good steps complete the interval begun before the save.
  second.update(true);
  second.update(true);
  EXPECT_EQ(second.scale(), 65536.0);
}

TEST(TrainLossScaler, LoadStateNamesTheBadKeyAndChangesNothing) {
  LossScaler scaler(true);
  CheckpointState state = scaler.state();
  state.erase("loss_scale_skipped");
  state["loss_scale"] = 1024.0;
  EXPECT_EQ(tandem::testing::message_of<tandem::UsageError>([&] { scaler.load_state(state); }),
            "checkpoint state has no 'loss_scale_skipped' (loss scaler)");
  EXPECT_EQ(scaler.scale(), 65536.0);

  state["loss_scale_skipped"] = std::string("none");
  EXPECT_EQ(tandem::testing::message_of<tandem::UsageError>([&] { scaler.load_state(state); }),
            "checkpoint state 'loss_scale_skipped' must be an integer of 0 or more");
  state["loss_scale_skipped"] = int64_t{0};
  state["loss_scale"] = 0.0;
  EXPECT_EQ(tandem::testing::message_of<tandem::UsageError>([&] { scaler.load_state(state); }),
            "checkpoint state 'loss_scale' must be a positive finite number");
}

}  // namespace
