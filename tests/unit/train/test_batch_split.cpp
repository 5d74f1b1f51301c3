// The batch split's contract (tandem/train/batch_split.h): the global batch
// never changes whatever the cut, a back-off halves to a divisor and becomes
// the cap, a resumed cap cuts a larger micro-batch down.
#include "tandem/train/batch_split.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <stdexcept>
#include <vector>

namespace tandem {
namespace {

SamplerOptions options(int64_t micro_batch, int64_t accum, int rank = 0) {
  SamplerOptions o;
  o.dataset_size = 1000;
  o.micro_batch = micro_batch;
  o.grad_accum = accum;
  o.world_size = 2;
  o.rank = rank;
  o.seed = 7;
  return o;
}

// The samples of a step over both ranks, sorted.
std::vector<int64_t> step_samples(const BatchSplit& rank0, const BatchSplit& rank1, int64_t step) {
  std::vector<int64_t> all;
  for (const BatchSplit* split : {&rank0, &rank1})
    for (int a = 0; a < split->accum(); ++a) {
      const MicroBatch part = split->sampler().micro_batch(0, step, a);
      all.insert(all.end(), part.indices.begin(), part.indices.end());
    }
  std::sort(all.begin(), all.end());
  return all;
}

TEST(BatchSplit, ResplitKeepsTheGlobalBatchAndItsSamples) {
  BatchSplit rank0(options(12, 1, 0)), rank1(options(12, 1, 1));
  const std::vector<int64_t> whole = step_samples(rank0, rank1, 3);
  rank0.resplit(4);
  rank1.resplit(4);
  EXPECT_EQ(rank0.micro_batch(), 4);
  EXPECT_EQ(rank0.accum(), 3);
  EXPECT_EQ(rank0.share(), 12);
  EXPECT_EQ(rank0.sampler().global_batch(), 24);
  EXPECT_EQ(step_samples(rank0, rank1, 3), whole);
}

TEST(BatchSplit, ResplitRefusesAMicroBatchThatDoesNotDivideTheShare) {
  BatchSplit split(options(12, 1));
  EXPECT_THROW(split.resplit(5), std::invalid_argument);
  EXPECT_THROW(split.resplit(0), std::invalid_argument);
  EXPECT_EQ(split.micro_batch(), 12);
}

TEST(BatchSplit, BackOffHalvesToADivisorAndKeepsItAsTheCap) {
  BatchSplit split(options(12, 1));
  EXPECT_EQ(split.oom_cap(), 0);
  ASSERT_TRUE(split.back_off());
  EXPECT_EQ(split.micro_batch(), 6);
  EXPECT_EQ(split.oom_cap(), 6);
  ASSERT_TRUE(split.back_off());
  EXPECT_EQ(split.micro_batch(), 3);
  // Half of 3 is 1 (12 = 1 x 12).
  ASSERT_TRUE(split.back_off());
  EXPECT_EQ(split.micro_batch(), 1);
  EXPECT_EQ(split.accum(), 12);
  EXPECT_FALSE(split.back_off());
  EXPECT_EQ(split.micro_batch(), 1);
  EXPECT_EQ(split.oom_cap(), 1);
}

TEST(BatchSplit, BackOffSkipsHalvesThatDoNotDivide) {
  // A share of 10: half of 10 is 5, half of 5 (2) divides, half of 2 is 1.
  BatchSplit split(options(10, 1));
  ASSERT_TRUE(split.back_off());
  EXPECT_EQ(split.micro_batch(), 5);
  ASSERT_TRUE(split.back_off());
  EXPECT_EQ(split.micro_batch(), 2);
  EXPECT_EQ(split.accum(), 5);
}

TEST(BatchSplit, CapCutsALargerMicroBatchDownAndLeavesASmallerOne) {
  BatchSplit large(options(16, 1));
  large.cap_at(5);
  EXPECT_EQ(large.micro_batch(), 4);  // the largest divisor of 16 up to 5
  EXPECT_EQ(large.accum(), 4);
  EXPECT_EQ(large.oom_cap(), 5);
  BatchSplit small(options(2, 8));
  small.cap_at(5);
  EXPECT_EQ(small.micro_batch(), 2);
  EXPECT_EQ(small.accum(), 8);
}

// Packed (SamplerOptions::pack_tokens): 40 samples a step of 1 .. 8 tokens
// in sequences of 16, micro-batches of `sequences` a rank.
SamplerOptions packed(int64_t sequences, int rank = 0) {
  SamplerOptions o = options(sequences, 1, rank);
  auto lengths = std::make_shared<std::vector<int64_t>>(o.dataset_size);
  for (int64_t i = 0; i < o.dataset_size; ++i) (*lengths)[i] = 1 + (i * 5) % 8;
  o.lengths = lengths;
  o.pack_tokens = 16;
  o.global_batch = 40;
  return o;
}

// The valid samples of a packed step over both ranks, sorted.
std::vector<int64_t> packed_step(const BatchSplit& rank0, const BatchSplit& rank1, int64_t step) {
  std::vector<int64_t> all;
  for (const BatchSplit* split : {&rank0, &rank1})
    for (int64_t a = 0; a < split->micro_steps(step); ++a) {
      const MicroBatch part = split->sampler().micro_batch(0, step, static_cast<int>(a));
      for (size_t k = 0; k < part.indices.size(); ++k)
        if (part.valid[k]) all.push_back(part.indices[k]);
    }
  std::sort(all.begin(), all.end());
  return all;
}

TEST(BatchSplit, PackedCutsCountSequencesAndKeepTheStepsSamples) {
  BatchSplit rank0(packed(4, 0)), rank1(packed(4, 1));
  EXPECT_TRUE(rank0.packed());
  EXPECT_EQ(rank0.share(), 20);  // every sample alone, 40 over 2 ranks
  EXPECT_EQ(rank0.describe(), "4 packed sequences of 16 tokens");
  const std::vector<int64_t> whole = packed_step(rank0, rank1, 2);
  EXPECT_EQ(whole.size(), 40u);
  const int64_t micro_steps = rank0.micro_steps(2);
  // Halving the sequences needs about twice the micro-steps, for the same samples.
  ASSERT_TRUE(rank0.back_off());
  ASSERT_TRUE(rank1.back_off());
  EXPECT_EQ(rank0.micro_batch(), 2);
  EXPECT_EQ(rank0.oom_cap(), 2);
  EXPECT_GE(rank0.micro_steps(2), 2 * micro_steps - 1);
  EXPECT_EQ(packed_step(rank0, rank1, 2), whole);
  // Any number of sequences is a cut; 1 is the last.
  rank0.resplit(3);
  EXPECT_EQ(rank0.micro_batch(), 3);
  ASSERT_TRUE(rank0.back_off());
  EXPECT_EQ(rank0.micro_batch(), 1);
  EXPECT_FALSE(rank0.back_off());
  BatchSplit capped(packed(8));
  capped.cap_at(5);
  EXPECT_EQ(capped.micro_batch(), 5);
  // Backing off from a step in which a rank ran fewer sequences than the
  // micro-batch allows halves what it ran: 40 samples of about 4.5 tokens
  // fill about 12 sequences of 16, 6 a rank, so 8 allowed becomes 3.
  BatchSplit roomy(packed(8));
  ASSERT_TRUE(roomy.back_off(1));
  EXPECT_EQ(roomy.micro_batch(), (roomy.sampler().sequence_count(0, 1) + 1) / 2 / 2);
}

TEST(BatchSplit, ReseedKeepsTheCutAndChangesTheOrder) {
  BatchSplit split(options(4, 3));
  const MicroBatch before = split.sampler().micro_batch(0, 0, 0);
  split.reseed(8);
  EXPECT_EQ(split.micro_batch(), 4);
  EXPECT_EQ(split.accum(), 3);
  EXPECT_EQ(split.sampler().options().seed, 8u);
  EXPECT_NE(split.sampler().micro_batch(0, 0, 0).indices, before.indices);
}

}  // namespace
}  // namespace tandem
