// When skipped steps end a run: under fp16 too, where the loss scaler used to
// halve its scale for ever on a loss that overflows in the forward pass.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <stdexcept>

#include "tandem/train/bad_steps.h"
#include "tandem/train/loss_scaler.h"

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// Steps with non-finite gradients until the run stops; the step it stopped
// at (1-based) and its message, or 0 when it ran all `steps`.
std::pair<int64_t, std::string> run_bad(tandem::LossScaler& scaler, double loss, int64_t steps, int64_t max = 3) {
  tandem::BadSteps bad(max, "train.max_bad_steps");
  for (int64_t step = 0; step < steps; ++step) {
    const bool apply = scaler.update(false);
    try {
      bad.after_step(step, apply, loss, scaler, "out/checkpoints");
    } catch (const std::runtime_error& e) {
      return {step + 1, e.what()};
    }
  }
  return {0, ""};
}

TEST(BadSteps, AnInfiniteLossUnderFp16StopsTheRun) {
  tandem::LossScaler scaler(/*enabled=*/true);
  const auto [at, why] = run_bad(scaler, kInf, 2000);
  EXPECT_EQ(at, 3);
  EXPECT_EQ(why,
            "step 3: loss or gradients not finite for 3 steps in a row (train.max_bad_steps); stopping. The last "
            "good checkpoint in out/checkpoints is untouched. Under fp16 the loss scale is 8192 and the loss itself "
            "overflows; train.precision = \"bf16\" (GPUs of compute capability 8.0 or more) or \"fp32\" has the "
            "range fp16 lacks");
}

TEST(BadSteps, Fp16OverflowInTheGradientsOnlyLowersTheScaleUntilItIsDead) {
  // 65536 halves to 2^-10 after 26 skips; below it, 3 more stop the run.
  tandem::LossScaler scaler(true);
  const auto [at, why] = run_bad(scaler, 1.5, 2000);
  EXPECT_EQ(at, 26 + 3);
  EXPECT_NE(why.find("Under fp16 the loss scale is 0.00012207 (below 2^-10: the gradients overflow at any scale)"),
            std::string::npos)
      << why;
}

TEST(BadSteps, WithoutAScalerEverySkipCountsAndAGoodStepResets) {
  tandem::LossScaler scaler(false);
  tandem::BadSteps bad(2, "train.max_bad_steps");
  bad.after_step(0, false, 1.0, scaler, "c");
  bad.after_step(1, true, 1.0, scaler, "c");
  EXPECT_EQ(bad.in_row(), 0);
  bad.after_step(2, false, 1.0, scaler, "c");
  EXPECT_THROW(bad.after_step(3, false, 1.0, scaler, "c"), std::runtime_error);
}

}  // namespace
