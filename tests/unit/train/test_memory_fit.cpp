// The one rule for train.micro_batch = "auto" and train.recompute = "auto"
// (memory_fit.h), which training and the plan command share, and the GPUs
// the plan command plans for (plan_gpus.h).
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "tandem/error.h"
#include "tandem/train/memory_fit.h"
#include "tandem/train/plan_gpus.h"

namespace {

constexpr int64_t MB = 1 << 20;

// Activations of 10 MB a sample without recomputation, 1 MB with.
tandem::Activations made_up(const tandem::ActivationQuery& q) {
  return {q.micro_batch * (q.recompute ? 1 : 10) * MB, 0};
}

struct Fixture {
  torch::nn::Linear model{torch::nn::Linear(256, 256)};  // 257 KB of weights, as much again of gradients
  tandem::TrainKeys settings;
  int64_t fixed() {
    tandem::TrainKeys none = settings;
    none.micro_batch = {1, false};
    none.recompute = "none";
    const tandem::MemoryPlan p = tandem::MemoryFit(*model, made_up, none, {}, 16).at(1, "none");
    return p.total() - p.activations;
  }
  tandem::MemoryPlan resolve(double budget) {
    return tandem::MemoryFit(*model, made_up, settings, {}, 16).resolve(budget);
  }
};

TEST(MemoryFit, AFixedMicroBatchFitsExactlyAtItsTotalAndRecomputesUnderAutoOnlyWhenOver) {
  Fixture f;
  f.settings.micro_batch = {4, false};
  f.settings.recompute = "auto";
  const double edge = static_cast<double>(f.fixed() + 40 * MB);
  EXPECT_EQ(f.resolve(edge).recompute, "none");
  EXPECT_EQ(f.resolve(edge).total(), f.fixed() + 40 * MB);
  EXPECT_EQ(f.resolve(edge - 1).recompute, "blocks");
  f.settings.recompute = "none";
  const tandem::MemoryPlan over = f.resolve(edge - 1);
  EXPECT_EQ(over.recompute, "none");
  EXPECT_FALSE(tandem::MemoryFit(*f.model, made_up, f.settings, {}, 16).fits(over, edge - 1));
}

TEST(MemoryFit, AutoTakesTheLargestDividingMicroBatchWithoutRecomputationBeforeAnyWithIt) {
  Fixture f;
  f.settings.micro_batch = {0, true};
  f.settings.recompute = "auto";
  // 3 samples fit without recomputation, 3 does not divide 16: 2, not the
  // 16 recomputation would fit.
  const tandem::MemoryPlan p = f.resolve(static_cast<double>(f.fixed() + 35 * MB));
  EXPECT_EQ(p.micro_batch, 2);
  EXPECT_EQ(p.recompute, "none");
  // Not even one sample without: recomputing, the largest that fits.
  const tandem::MemoryPlan r = f.resolve(static_cast<double>(f.fixed() + 9 * MB));
  EXPECT_EQ(r.micro_batch, 8);
  EXPECT_EQ(r.recompute, "blocks");
}

TEST(MemoryFit, AutoFittingNothingSaysWhatWouldFit) {
  Fixture f;
  f.settings.micro_batch = {0, true};
  f.settings.recompute = "none";
  try {
    f.resolve(static_cast<double>(f.fixed() + 5 * MB));
    FAIL() << "nothing fits, and resolve did not throw";
  } catch (const tandem::UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("does not fit even at micro-batch 1 (recompute none)"), std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("It would fit with: train.recompute = \"blocks\""), std::string::npos)
        << e.what();
  }
}

// The messages' sizes are rounded as the plan's tables round them, not
// truncated: a 6.75 MB budget is 7 MB in both.
TEST(MemoryFit, MessagesRoundSizesAsThePlanTables) {
  Fixture f;
  f.settings.micro_batch = {0, true};
  f.settings.recompute = "none";
  try {
    f.resolve(6.75 * MB);
    FAIL() << "nothing fits, and resolve did not throw";
  } catch (const tandem::UsageError& e) {
    EXPECT_NE(std::string(e.what()).find(") against 7 MB, "), std::string::npos) << e.what();
  }
}

TEST(PlanGpus, NamedGpusAndSizesLessTheContext) {
  const tandem::PlannedDevices t4 = tandem::parse_gpus("t4x2", "plan.gpus");
  EXPECT_EQ(t4.count, 2);
  EXPECT_EQ(t4.cc_major, 7);
  EXPECT_EQ(t4.free_bytes, (int64_t{15095} << 20) - tandem::kContextBytes);
  EXPECT_EQ(tandem::parse_gpus("H100-80GB", "plan.gpus").count, 1);
  EXPECT_EQ(tandem::parse_gpus("a100-40gbx8", "plan.gpus").cc_major, 8);
  const tandem::PlannedDevices sized = tandem::parse_gpus("15.5GiBx4", "plan.gpus");
  EXPECT_EQ(sized.count, 4);
  EXPECT_EQ(sized.free_bytes, (int64_t{31} << 29) - tandem::kContextBytes);
  EXPECT_EQ(tandem::parse_gpus("16GB", "plan.gpus").free_bytes, int64_t{16000000000} - tandem::kContextBytes);
  for (const char* name : {"t4", "l4", "a10g", "v100-16gb", "v100-32gb", "a100-40gb", "a100-80gb", "h100-80gb", "h200"})
    EXPECT_NO_THROW(tandem::parse_gpus(name, "plan.gpus")) << name;
}

TEST(PlanGpus, BadListsAreRefusedNamingTheKey) {
  for (const char* bad : {"p100x2", "t4x0", "t4x", "x2", "0.4GiB", "t4 x2", ""}) {
    try {
      tandem::parse_gpus(bad, "plan.gpus");
      ADD_FAILURE() << "'" << bad << "' was accepted";
    } catch (const tandem::UsageError& e) {
      EXPECT_EQ(std::string(e.what()).rfind(std::string("plan.gpus = \"") + bad + "\": ", 0), 0u) << e.what();
    }
  }
}

}  // namespace
