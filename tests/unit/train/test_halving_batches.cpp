// Work that halves its batches when the device runs out of memory
// (halving_batches.h), as summarize's generation runs.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <stdexcept>
#include <utility>
#include <vector>

#include "tandem/train/halving_batches.h"

namespace {

using Ranges = std::vector<std::pair<int64_t, int64_t>>;

// Runs out of memory on any batch of more than `most` items.
tandem::RunBatch fitting(int64_t most, Ranges& done) {
  return [most, &done](int64_t begin, int64_t end) {
    TORCH_CHECK_WITH(OutOfMemoryError, end - begin <= most, "CUDA out of memory. Tried to allocate 2.00 GiB");
    done.emplace_back(begin, end);
  };
}

TEST(HalvingBatches, ABatchThatRunsOutOfMemoryRunsAgainAtHalfAndTheRestAtThatSize) {
  Ranges done;
  const int64_t settled = tandem::run_in_halving_batches(11, 16, c10::Device(c10::kCPU), "test", fitting(3, done));
  EXPECT_EQ(settled, 2);  // 16 -> 8 -> 4 -> 2: the first size at most 3
  const Ranges expected = {{0, 2}, {2, 4}, {4, 6}, {6, 8}, {8, 10}, {10, 11}};
  EXPECT_EQ(done, expected);  // every item once, in order
}

TEST(HalvingBatches, WorkThatFitsRunsInTheBatchesAsked) {
  Ranges done;
  EXPECT_EQ(tandem::run_in_halving_batches(5, 2, c10::Device(c10::kCPU), "test", fitting(2, done)), 2);
  const Ranges expected = {{0, 2}, {2, 4}, {4, 5}};
  EXPECT_EQ(done, expected);
}

TEST(HalvingBatches, OutOfMemoryAtOneAndOtherErrorsReachTheCaller) {
  Ranges done;
  EXPECT_THROW(tandem::run_in_halving_batches(3, 4, c10::Device(c10::kCPU), "test", fitting(0, done)),
               c10::OutOfMemoryError);
  EXPECT_TRUE(done.empty());
  int calls = 0;
  const auto failing = [&calls](int64_t, int64_t) {
    ++calls;
    TORCH_CHECK(false, "a shape mismatch");
  };
  EXPECT_THROW(tandem::run_in_halving_batches(3, 4, c10::Device(c10::kCPU), "test", failing), c10::Error);
  EXPECT_EQ(calls, 1);  // not retried: only running out of memory is
}

}  // namespace
