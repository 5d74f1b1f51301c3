#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "tandem/data/eval_shard.h"
#include "tandem/data/packing.h"
#include "tandem/data/sampler.h"
#include "tandem/error.h"
#include "../test_support.h"

using tandem::MicroBatch;
using tandem::Sampler;
using tandem::SamplerOptions;
using tandem::testing::message_of;

namespace {

SamplerOptions options(int64_t n, int64_t micro, int64_t accum, int world, int rank) {
  SamplerOptions o;
  o.dataset_size = n;
  o.micro_batch = micro;
  o.grad_accum = accum;
  o.world_size = world;
  o.rank = rank;
  o.seed = 1234;
  return o;
}

// Every rank's sampler for one configuration.
std::vector<Sampler> world_of(SamplerOptions o) {
  std::vector<Sampler> ranks;
  for (int r = 0; r < o.world_size; ++r) {
    o.rank = r;
    ranks.emplace_back(o);
  }
  return ranks;
}

// Global micro-batch j of a step, asked of the rank that runs it.
MicroBatch micro_batch_j(const std::vector<Sampler>& ranks, int64_t epoch, int64_t step, int64_t j) {
  const int world = static_cast<int>(ranks.size());
  return ranks[j % world].micro_batch(epoch, step, static_cast<int>(j / world));
}

// The whole epoch as one rank's sampler sees it, step by step, micro-step by micro-step.
std::vector<int64_t> epoch_indices(const Sampler& s, int64_t epoch) {
  std::vector<int64_t> all;
  for (int64_t step = 0; step < s.steps_per_epoch(); ++step)
    for (int a = 0; a < s.options().grad_accum; ++a) {
      const MicroBatch b = s.micro_batch(epoch, step, a);
      all.insert(all.end(), b.indices.begin(), b.indices.end());
    }
  return all;
}

TEST(Sampler, OrderDependsOnlyOnSeedAndEpoch) {
  const Sampler a(options(100, 5, 2, 1, 0));
  const Sampler b(options(100, 5, 2, 1, 0));
  EXPECT_EQ(epoch_indices(a, 3), epoch_indices(b, 3));
  EXPECT_EQ(epoch_indices(a, 3), epoch_indices(a, 3));
  EXPECT_NE(epoch_indices(a, 3), epoch_indices(a, 4));

  SamplerOptions other = options(100, 5, 2, 1, 0);
  other.seed = 1235;
  EXPECT_NE(epoch_indices(a, 3), epoch_indices(Sampler(other), 3));
}

// The order is part of what a checkpoint's cursor means, so it must not drift
// with the standard library or LibTorch: a resumed run would see other samples.
TEST(Sampler, OrderIsPinnedDown) {
  SamplerOptions o = options(10, 10, 1, 1, 0);
  o.seed = 42;
  const Sampler s(o);
  EXPECT_EQ(s.micro_batch(0, 0, 0).indices, (std::vector<int64_t>{2, 0, 4, 7, 8, 3, 5, 1, 9, 6}));
  EXPECT_EQ(s.micro_batch(1, 0, 0).indices, (std::vector<int64_t>{2, 8, 7, 3, 6, 4, 0, 9, 5, 1}));
}

// A prefetch thread asks for the next epoch while the loop finishes this one.
TEST(Sampler, ThreadsAskingForDifferentEpochsAgree) {
  const Sampler s(options(1000, 10, 1, 1, 0));
  const std::vector<std::vector<int64_t>> expected = {epoch_indices(s, 0), epoch_indices(s, 1), epoch_indices(s, 2)};
  // Epochs 0 and 2 share a cache slot, so the threads keep replacing each other's order.
  auto agree = [&s, &expected](int64_t first_epoch) {
    for (int64_t epoch = first_epoch; epoch < first_epoch + 20; ++epoch)
      for (int64_t step = 0; step < s.steps_per_epoch(); step += 7)
        if (s.micro_batch(epoch % 3, step, 0).indices[3] != expected[epoch % 3][step * 10 + 3]) return false;
    return true;
  };
  bool other_agrees = false;
  std::thread other([&] { other_agrees = agree(1); });
  EXPECT_TRUE(agree(0));
  other.join();
  EXPECT_TRUE(other_agrees);
}

TEST(Sampler, EverySampleOncePerEpoch) {
  const Sampler s(options(96, 4, 3, 1, 0));
  ASSERT_EQ(s.global_batch(), 12);
  ASSERT_EQ(s.steps_per_epoch(), 8);
  std::vector<int64_t> seen = epoch_indices(s, 0);
  std::sort(seen.begin(), seen.end());
  std::vector<int64_t> all(96);
  for (int64_t i = 0; i < 96; ++i) all[i] = i;
  EXPECT_EQ(seen, all);
}

TEST(Sampler, NoShuffleKeepsDatasetOrder) {
  SamplerOptions o = options(12, 2, 1, 2, 1);
  o.shuffle = false;
  const Sampler s(o);
  EXPECT_EQ(s.micro_batch(0, 1, 0).indices, (std::vector<int64_t>{6, 7}));
  EXPECT_EQ(s.micro_batch(5, 1, 0).indices, (std::vector<int64_t>{6, 7}));
}

TEST(Sampler, GlobalBatchesAreTheSameOnAnyWorldSize) {
  // G = 8 on 1, 2 and 4 ranks.
  const std::vector<std::vector<Sampler>> worlds = {
      world_of(options(50, 2, 4, 1, 0)), world_of(options(50, 2, 2, 2, 0)), world_of(options(50, 2, 1, 4, 0))};
  for (const auto& ranks : worlds) ASSERT_EQ(ranks[0].steps_per_epoch(), 6);

  for (int64_t epoch : {0, 7}) {
    for (int64_t step = 0; step < 6; ++step) {
      std::multiset<int64_t> reference;
      for (size_t w = 0; w < worlds.size(); ++w) {
        std::multiset<int64_t> samples;
        for (const Sampler& rank : worlds[w])
          for (int a = 0; a < rank.options().grad_accum; ++a) {
            const MicroBatch b = rank.micro_batch(epoch, step, a);
            samples.insert(b.indices.begin(), b.indices.end());
          }
        if (w == 0) reference = samples;
        EXPECT_EQ(samples, reference) << "world " << worlds[w].size() << ", step " << step;
        for (int64_t j = 0; j < 4; ++j)
          EXPECT_EQ(micro_batch_j(worlds[w], epoch, step, j).indices, micro_batch_j(worlds[0], epoch, step, j).indices)
              << "world " << worlds[w].size() << ", step " << step << ", micro-batch " << j;
      }
    }
  }
}

TEST(Sampler, MicroStepSpansTheWorld) {
  EXPECT_EQ(tandem::micro_batch_index(0, 4, 3), 3);
  EXPECT_EQ(tandem::micro_batch_index(2, 4, 1), 9);
  SamplerOptions o = options(16, 2, 2, 2, 0);
  o.shuffle = false;
  const auto ranks = world_of(o);
  // Micro-step 0 covers the first half of the global batch on the two ranks together.
  EXPECT_EQ(ranks[0].micro_batch(0, 0, 0).indices, (std::vector<int64_t>{0, 1}));
  EXPECT_EQ(ranks[1].micro_batch(0, 0, 0).indices, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(ranks[0].micro_batch(0, 0, 1).indices, (std::vector<int64_t>{4, 5}));
}

// Lengths 0 .. n-1 scrambled, so that a sample's length says nothing of its index.
std::shared_ptr<const std::vector<int64_t>> scrambled_lengths(int64_t n) {
  auto lengths = std::make_shared<std::vector<int64_t>>(n);
  for (int64_t i = 0; i < n; ++i) (*lengths)[i] = (i * 7) % n;
  return lengths;
}

TEST(Sampler, GroupedByLengthTheSameStepsLongestFirstDealtInTurn) {
  const int64_t n = 50;
  SamplerOptions o = options(n, 2, 2, 2, 0);  // G = 8: 2 ranks x 2 micro-steps of 2
  const auto drawn = world_of(o);
  o.lengths = scrambled_lengths(n);
  const auto grouped = world_of(o);
  const auto& length = *o.lengths;
  for (int64_t step = 0; step < drawn[0].steps_per_epoch(); ++step) {
    std::multiset<int64_t> as_drawn;
    std::vector<int64_t> by_length;  // micro-step by micro-step, the ranks' rows in turn
    for (int a = 0; a < 2; ++a) {
      for (int r = 0; r < 2; ++r) {
        const MicroBatch d = drawn[r].micro_batch(3, step, a);
        as_drawn.insert(d.indices.begin(), d.indices.end());
      }
      const MicroBatch g0 = grouped[0].micro_batch(3, step, a), g1 = grouped[1].micro_batch(3, step, a);
      by_length.insert(by_length.end(), {g0.indices[0], g1.indices[0], g1.indices[1], g0.indices[1]});
    }
    // The step learns from the same samples; micro-step 0 holds the 4
    // longest, rank 0 the 1st and 4th of them, rank 1 the 2nd and 3rd.
    EXPECT_EQ(std::multiset<int64_t>(by_length.begin(), by_length.end()), as_drawn) << "step " << step;
    for (size_t k = 1; k < by_length.size(); ++k)
      EXPECT_GT(length[by_length[k - 1]], length[by_length[k]]) << "step " << step << ", position " << k;
  }
}

TEST(Sampler, GroupedMicroStepsHoldTheSameRowsOnAnyWorldSize) {
  // G = 8 as 2 micro-steps of 1 rank x 4 and of 2 ranks x 2: micro-step a
  // holds the same 4 rows either way.
  SamplerOptions one = options(40, 4, 2, 1, 0), two = options(40, 2, 2, 2, 0);
  one.lengths = two.lengths = scrambled_lengths(40);
  const auto one_rank = world_of(one), two_ranks = world_of(two);
  for (int64_t step = 0; step < 5; ++step)
    for (int a = 0; a < 2; ++a) {
      const MicroBatch whole = one_rank[0].micro_batch(1, step, a);
      std::multiset<int64_t> split;
      for (const Sampler& rank : two_ranks) {
        const MicroBatch b = rank.micro_batch(1, step, a);
        split.insert(b.indices.begin(), b.indices.end());
      }
      EXPECT_EQ(split, std::multiset<int64_t>(whole.indices.begin(), whole.indices.end()))
          << "step " << step << ", micro-step " << a;
    }
}

TEST(Sampler, GroupedPaddingComesLastWhateverItsLength) {
  SamplerOptions o = options(5, 2, 2, 1, 0);  // G = 4: a full step, then 1 of 4
  o.drop_last = false;
  o.shuffle = false;
  o.lengths = std::make_shared<const std::vector<int64_t>>(std::vector<int64_t>{9, 3, 8, 1, 2});
  const Sampler s(o);
  // Step 0 is samples 0-3 longest first; step 1 holds sample 4 and, as
  // padding, samples 0-2 again, which stay behind it though longer.
  EXPECT_EQ(s.micro_batch(0, 0, 0).indices, (std::vector<int64_t>{0, 2}));
  EXPECT_EQ(s.micro_batch(0, 0, 1).indices, (std::vector<int64_t>{1, 3}));
  EXPECT_EQ(s.micro_batch(0, 1, 0).indices, (std::vector<int64_t>{4, 0}));
  EXPECT_EQ(s.micro_batch(0, 1, 0).valid, (std::vector<uint8_t>{1, 0}));
  EXPECT_EQ(s.micro_batch(0, 1, 1).indices, (std::vector<int64_t>{2, 1}));
}

TEST(Packing, FirstFitDecreasingByHand) {
  // Longest first into sequences of 8: 7 opens one, 5 another, 4 a third;
  // 3 fits the second, 2 the third, 1 the first.
  EXPECT_EQ(tandem::pack_first_fit_decreasing({5, 3, 7, 2, 4, 1}, 8),
            (std::vector<std::vector<int64_t>>{{2, 5}, {0, 1}, {4, 3}}));
  EXPECT_EQ(tandem::pack_first_fit_decreasing({8, 8}, 8), (std::vector<std::vector<int64_t>>{{0}, {1}}));
  EXPECT_TRUE(tandem::pack_first_fit_decreasing({}, 8).empty());
  EXPECT_THROW(tandem::pack_first_fit_decreasing({3, 9}, 8), std::invalid_argument);
  EXPECT_THROW(tandem::pack_first_fit_decreasing({0}, 8), std::invalid_argument);
}

TEST(Packing, EvenlyLongestFirstIntoTheEmptiest) {
  // 7, 5, 4, 3, 2, 1 over 3 sequences of 8: 7 | 5 | 4, then 3 to the 4
  // (7), 2 to the 5 (7), 1 to the first 7 (8); fullest first.
  EXPECT_EQ(tandem::pack_evenly({5, 3, 7, 2, 4, 1}, 8, 3),
            (std::vector<std::vector<int64_t>>{{2, 5}, {0, 3}, {4, 1}}));
  // More sequences than samples: the empty ones are dropped.
  EXPECT_EQ(tandem::pack_evenly({3, 2}, 8, 4), (std::vector<std::vector<int64_t>>{{0}, {1}}));
  // 6, 6, 5 in two sequences of 8 do not go: none.
  EXPECT_TRUE(tandem::pack_evenly({6, 6, 5}, 8, 2).empty());
}

namespace {

// Lengths 1 .. 12 scrambled, packed into sequences of 16.
SamplerOptions packed_options(int64_t n, int64_t micro, int64_t global, int world) {
  SamplerOptions o = options(n, micro, 1, world, 0);
  auto lengths = std::make_shared<std::vector<int64_t>>(n);
  for (int64_t i = 0; i < n; ++i) (*lengths)[i] = 1 + (i * 7) % 12;
  o.lengths = lengths;
  o.pack_tokens = 16;
  o.global_batch = global;
  return o;
}

// Each rank's sequences of a micro-step, as sets of samples.
std::multiset<std::multiset<int64_t>> sequences_of(const MicroBatch& b) {
  std::vector<std::multiset<int64_t>> sequences;
  for (size_t k = 0; k < b.indices.size(); ++k) {
    if (!b.valid[k]) continue;
    if (static_cast<int64_t>(sequences.size()) <= b.sequence[k]) sequences.resize(b.sequence[k] + 1);
    sequences[b.sequence[k]].insert(b.indices[k]);
  }
  return {sequences.begin(), sequences.end()};
}

}  // namespace

TEST(Sampler, PackedStepsHoldTheDrawnSamplesInSequencesThatFit) {
  SamplerOptions o = packed_options(50, 2, 12, 2);
  const auto packed = world_of(o);
  const auto drawn = world_of(options(50, 3, 2, 2, 0));  // the same 12 samples a step, unpacked
  const auto& length = *o.lengths;
  EXPECT_EQ(packed[0].steps_per_epoch(), drawn[0].steps_per_epoch());
  for (int64_t step = 0; step < packed[0].steps_per_epoch(); ++step) {
    std::multiset<int64_t> as_drawn, as_packed;
    for (int a = 0; a < 2; ++a)
      for (const Sampler& rank : drawn) {
        const MicroBatch d = rank.micro_batch(2, step, a);
        as_drawn.insert(d.indices.begin(), d.indices.end());
      }
    const int64_t micro_steps = packed[0].micro_steps(2, step);
    EXPECT_EQ(packed[1].micro_steps(2, step), micro_steps);
    int64_t sequences = 0;
    for (int64_t a = 0; a < micro_steps; ++a)
      for (const Sampler& rank : packed) {
        const MicroBatch b = rank.micro_batch(2, step, static_cast<int>(a));
        std::vector<int64_t> fill(static_cast<size_t>(o.micro_batch), 0);
        for (size_t k = 0; k < b.indices.size(); ++k) {
          if (b.valid[k]) as_packed.insert(b.indices[k]);
          fill[static_cast<size_t>(b.sequence[k])] += length[b.indices[k]];
        }
        for (const int64_t f : fill) EXPECT_LE(f, 16) << "step " << step;
        sequences += static_cast<int64_t>(sequences_of(b).size());
      }
    EXPECT_EQ(as_packed, as_drawn) << "step " << step;
    // As many micro-steps as the sequences need, no more.
    EXPECT_EQ(micro_steps, (sequences + 3) / 4) << "step " << step;
    EXPECT_THROW(packed[0].micro_batch(2, step, static_cast<int>(micro_steps)), std::out_of_range);
  }
}

TEST(Sampler, PackedStepsHoldTheSameSamplesOnAnyWorldSize) {
  // 4 sequences a micro-step as 1 rank x 4 and as 2 ranks x 2; where the
  // packing takes an odd number of sequences, 2 ranks spread the samples
  // over one more, so the sequences may differ, the step's samples do not.
  const auto one = world_of(packed_options(40, 4, 10, 1)), two = world_of(packed_options(40, 2, 10, 2));
  for (int64_t step = 0; step < 4; ++step) {
    std::multiset<int64_t> whole, split;
    for (int a = 0; a < one[0].micro_steps(0, step); ++a)
      for (const auto& sequence : sequences_of(one[0].micro_batch(0, step, a))) whole.insert(sequence.begin(), sequence.end());
    for (int a = 0; a < two[0].micro_steps(0, step); ++a)
      for (const Sampler& rank : two)
        for (const auto& sequence : sequences_of(rank.micro_batch(0, step, a))) split.insert(sequence.begin(), sequence.end());
    EXPECT_EQ(split, whole) << "step " << step;
    EXPECT_EQ(whole.size(), 10u) << "step " << step;
  }
}

TEST(Sampler, PackedRanksGetAsManySequencesEachStep) {
  // 9 sequences' worth spread over 10, so each of 2 ranks gets 5.
  const auto ranks = world_of(packed_options(200, 8, 60, 2));
  for (int64_t step = 0; step < 3; ++step) {
    int64_t counts[2] = {0, 0};
    for (int r = 0; r < 2; ++r)
      for (int a = 0; a < ranks[r].micro_steps(0, step); ++a)
        counts[r] += static_cast<int64_t>(sequences_of(ranks[r].micro_batch(0, step, a)).size());
    EXPECT_EQ(counts[0], counts[1]) << "step " << step;
  }
}

TEST(Sampler, PackedRankWithoutASequenceRunsTheShortestSampleAsPadding) {
  // Lengths 6, 5, 4 fit no two to a sequence of 8: three sequences for two
  // ranks, so micro-step 1 leaves rank 1 without one.
  SamplerOptions o = options(3, 1, 1, 2, 0);
  o.shuffle = false;
  o.lengths = std::make_shared<const std::vector<int64_t>>(std::vector<int64_t>{5, 6, 4});
  o.pack_tokens = 8;
  o.global_batch = 3;
  const auto ranks = world_of(o);
  EXPECT_EQ(ranks[0].micro_steps(0, 0), 2);
  EXPECT_EQ(ranks[0].micro_batch(0, 0, 0).indices, (std::vector<int64_t>{1}));
  EXPECT_EQ(ranks[1].micro_batch(0, 0, 0).indices, (std::vector<int64_t>{0}));
  EXPECT_EQ(ranks[0].micro_batch(0, 0, 1).indices, (std::vector<int64_t>{2}));
  const MicroBatch none = ranks[1].micro_batch(0, 0, 1);
  EXPECT_EQ(none.indices, (std::vector<int64_t>{2}));
  EXPECT_EQ(none.valid, (std::vector<uint8_t>{0}));
  EXPECT_EQ(none.sequence, (std::vector<int64_t>{0}));
}

TEST(Sampler, DropLastDropsThePartialBatch) {
  const Sampler s(options(21, 2, 1, 4, 0));
  EXPECT_EQ(s.steps_per_epoch(), 2);
  EXPECT_EQ(s.num_valid_in_step(1), 8);
  EXPECT_THROW(s.micro_batch(0, 2, 0), std::out_of_range);
}

TEST(Sampler, PaddingIsMarkedAndTheSameOnEveryRank) {
  SamplerOptions o = options(21, 2, 2, 2, 0);  // G = 8: 2 full steps, then 5 of 8
  o.drop_last = false;
  const auto ranks = world_of(o);
  const int64_t steps = ranks[0].steps_per_epoch();
  ASSERT_EQ(steps, 3);
  EXPECT_EQ(ranks[1].num_valid_in_step(2), 5);

  // The same global micro-batches (with validity) as one rank with G = 8.
  SamplerOptions one = o;
  one.grad_accum = 4;
  one.world_size = 1;
  const auto single = world_of(one);

  int64_t valid = 0;
  std::vector<int64_t> first_of_epoch;
  for (int64_t step = 0; step < steps; ++step)
    for (int64_t j = 0; j < 4; ++j) {
      const MicroBatch b = micro_batch_j(ranks, 0, step, j);
      const MicroBatch reference = micro_batch_j(single, 0, step, j);
      EXPECT_EQ(b.indices, reference.indices);
      EXPECT_EQ(b.valid, reference.valid);
      valid += b.num_valid();
      for (size_t t = 0; t < b.indices.size(); ++t) {
        const int64_t position = step * 8 + j * 2 + static_cast<int64_t>(t);
        EXPECT_EQ(b.valid[t], position < 21 ? 1 : 0) << "position " << position;
        if (position < 3) first_of_epoch.push_back(b.indices[t]);
        if (position >= 21) {
          EXPECT_EQ(b.indices[t], first_of_epoch[position - 21]);
        }
      }
    }
  EXPECT_EQ(valid, 21);
}

TEST(Sampler, PaddingWrapsWhenTheDatasetIsSmallerThanAGlobalBatch) {
  SamplerOptions o = options(3, 4, 1, 2, 1);
  o.drop_last = false;
  o.shuffle = false;
  const Sampler s(o);
  ASSERT_EQ(s.steps_per_epoch(), 1);
  const MicroBatch b = s.micro_batch(0, 0, 0);
  EXPECT_EQ(b.indices, (std::vector<int64_t>{1, 2, 0, 1}));
  EXPECT_EQ(b.num_valid(), 0);
}

TEST(Sampler, DatasetSmallerThanAGlobalBatchWithDropLast) {
  const std::string m = message_of<tandem::UsageError>([] { Sampler s(options(10, 4, 2, 2, 0)); });
  EXPECT_NE(m.find("10 samples"), std::string::npos) << m;
  EXPECT_NE(m.find("global batch of 16"), std::string::npos) << m;
  EXPECT_NE(m.find("train.global_batch"), std::string::npos) << m;
}

TEST(Sampler, RejectsBadOptions) {
  EXPECT_NE(message_of<tandem::UsageError>([] { Sampler s(options(10, 0, 1, 1, 0)); }).find("train.micro_batch"),
            std::string::npos);
  EXPECT_THROW(Sampler(options(0, 1, 1, 1, 0)), tandem::UsageError);
  EXPECT_THROW(Sampler(options(10, 1, 1, 2, 2)), std::invalid_argument);
  const Sampler s(options(10, 1, 2, 1, 0));
  EXPECT_THROW(s.micro_batch(0, 0, 2), std::out_of_range);
  EXPECT_THROW(s.micro_batch(-1, 0, 0), std::out_of_range);
}

TEST(DeriveGradAccum, DividesTheGlobalBatch) {
  EXPECT_EQ(tandem::derive_grad_accum(64, 8, 2), 4);
  EXPECT_EQ(tandem::derive_grad_accum(16, 8, 2), 1);
}

TEST(DeriveGradAccum, SuggestsTheNearestValidGlobalBatches) {
  const std::string m = message_of<tandem::UsageError>([] { tandem::derive_grad_accum(100, 8, 2); });
  EXPECT_NE(m.find("train.global_batch = 100"), std::string::npos) << m;
  EXPECT_NE(m.find("train.micro_batch (8)"), std::string::npos) << m;
  EXPECT_NE(m.find("world size (2)"), std::string::npos) << m;
  EXPECT_NE(m.find("96 or 112"), std::string::npos) << m;

  const std::string small = message_of<tandem::UsageError>([] { tandem::derive_grad_accum(4, 8, 2); });
  EXPECT_NE(small.find("nearest valid: 16"), std::string::npos) << small;
  EXPECT_NE(message_of<tandem::UsageError>([] { tandem::derive_grad_accum(0, 8, 2); }).find("train.global_batch"),
            std::string::npos);
}

TEST(EvalShard, CoversEverySampleOnceWithEqualShares) {
  for (int64_t n : {0, 1, 7, 8, 13}) {
    for (int world : {1, 3, 4}) {
      std::vector<int> count(n, 0);
      std::vector<size_t> batches;
      for (int r = 0; r < world; ++r) {
        const tandem::EvalShard shard = tandem::eval_shard(n, world, r);
        EXPECT_EQ(static_cast<int64_t>(shard.indices.size()), (n + world - 1) / world);
        EXPECT_LE(static_cast<int64_t>(shard.indices.size()) - shard.num_valid(), 1);
        for (size_t i = 0; i < shard.indices.size(); ++i) {
          ASSERT_GE(shard.indices[i], 0);
          ASSERT_LT(shard.indices[i], n);
          if (shard.valid[i]) ++count[shard.indices[i]];
        }
        batches.push_back(shard.micro_batches(2).size());
      }
      EXPECT_EQ(count, std::vector<int>(n, 1)) << n << " samples on " << world << " ranks";
      EXPECT_EQ(std::count(batches.begin(), batches.end(), batches[0]), world);
    }
  }
}

TEST(EvalShard, MicroBatchesCutTheShardInOrder) {
  const tandem::EvalShard shard = tandem::eval_shard(10, 3, 2);  // 2, 5, 8, pad
  ASSERT_EQ(shard.indices, (std::vector<int64_t>{2, 5, 8, 1}));
  const auto parts = shard.micro_batches(3);
  ASSERT_EQ(parts.size(), 2u);
  EXPECT_EQ(parts[0].indices, (std::vector<int64_t>{2, 5, 8}));
  EXPECT_EQ(parts[0].num_valid(), 3);
  EXPECT_EQ(parts[1].indices, (std::vector<int64_t>{1}));
  EXPECT_EQ(parts[1].valid, (std::vector<uint8_t>{0}));
}

}  // namespace
