// ZeRO's blocks (dist/shard.h) against hand-made splits, and a property: over
// the ranks, the pieces cover every element of every tensor once, in order.
#include <gtest/gtest.h>

#include <random>

#include "tandem/dist/shard.h"

namespace tandem {
namespace {

using Pieces = std::vector<ShardPiece>;

// Tensors of 5, 3 and 4 elements: a flat of 12.
const std::vector<int64_t> kNumels = {5, 3, 4};

TEST(Shard, ThreeRanksSplitTwelveElementsIntoBlocksOfFour) {
  EXPECT_EQ(shard_of(kNumels, 3, 0).pieces, (Pieces{{0, 0, 0, 4}}));
  // The last element of the first tensor, then all of the second.
  EXPECT_EQ(shard_of(kNumels, 3, 1).pieces, (Pieces{{0, 4, 0, 1}, {1, 0, 1, 3}}));
  EXPECT_EQ(shard_of(kNumels, 3, 2).pieces, (Pieces{{2, 0, 0, 4}}));
  EXPECT_EQ(shard_of(kNumels, 3, 2).block, 4);
  EXPECT_EQ(shard_of(kNumels, 3, 2).padded, 12);
}

TEST(Shard, AFlatThatDoesNotDivideIsPaddedAndALastBlockMayHoldOnlyPadding) {
  // 12 over 5 ranks: blocks of 3, 15 with padding; rank 4 holds none of it.
  const Shard third = shard_of(kNumels, 5, 3);
  EXPECT_EQ(third.block, 3);
  EXPECT_EQ(third.padded, 15);
  EXPECT_EQ(third.pieces, (Pieces{{2, 1, 0, 3}}));
  EXPECT_TRUE(shard_of(kNumels, 5, 4).pieces.empty());
}

TEST(Shard, TensorsStartAndBlocksEndAtMultiplesOfTheAlignment) {
  // At 4-element alignment the tensors start at 0, 8 and 12 of a flat of 16:
  // blocks of 8 over 2 ranks, the first holding 5 elements and 3 of padding.
  EXPECT_EQ(shard_of(kNumels, 2, 0).block, 6);
  const Shard first = shard_of(kNumels, 2, 0, 4);
  EXPECT_EQ(first.starts, (std::vector<int64_t>{0, 8, 12}));
  EXPECT_EQ(first.block, 8);
  EXPECT_EQ(first.pieces, (Pieces{{0, 0, 0, 5}}));
  EXPECT_EQ(shard_of(kNumels, 2, 1, 4).pieces, (Pieces{{1, 0, 0, 3}, {2, 0, 4, 4}}));
  // With a third tensor of 12 over 3 ranks, blocks of 8 (a flat of 24): the
  // cut inside it falls 4 elements from its start, a multiple of the
  // alignment.
  EXPECT_EQ(shard_of({5, 3, 12}, 3, 1, 4).pieces, (Pieces{{1, 0, 0, 3}, {2, 0, 4, 4}}));
  EXPECT_EQ(shard_of({5, 3, 12}, 3, 2, 4).pieces, (Pieces{{2, 4, 0, 8}}));
}

TEST(Shard, EmptyTensorsAndOneRank) {
  EXPECT_EQ(shard_of({0, 7, 0}, 1, 0).pieces, (Pieces{{1, 0, 0, 7}}));
  EXPECT_EQ(shard_of({}, 4, 2).block, 0);
  EXPECT_TRUE(shard_of({}, 4, 2).pieces.empty());
}

TEST(Shard, RefusesImpossibleSplits) {
  EXPECT_THROW(shard_of(kNumels, 0, 0), std::invalid_argument);
  EXPECT_THROW(shard_of(kNumels, 2, 2), std::invalid_argument);
  EXPECT_THROW(shard_of(kNumels, 2, -1), std::invalid_argument);
  EXPECT_THROW(shard_of(kNumels, 2, 0, 0), std::invalid_argument);
  EXPECT_THROW(shard_of({3, -1}, 2, 0), std::invalid_argument);
}

TEST(Shard, OverTheRanksThePiecesCoverEveryElementOnceInOrder) {
  std::mt19937 rng(7);
  for (int round = 0; round < 200; ++round) {
    // Half the rounds as ParamShards cuts (64-element alignment, tensors of
    // up to a few hundred elements), half small enough to hit every edge.
    const bool wide = round % 2 == 1;
    std::vector<int64_t> numels(1 + rng() % 6);
    for (auto& n : numels) n = rng() % (wide ? 400 : 9);
    const int world = 1 + static_cast<int>(rng() % 5);
    const int64_t align = wide ? 64 : 1 + static_cast<int64_t>(rng() % 4);
    // Walking rank by rank, piece by piece, must meet the tensors' elements
    // in the flat's order, each at its place in its block.
    size_t tensor = 0;
    int64_t offset = 0;
    for (int r = 0; r < world; ++r) {
      const Shard s = shard_of(numels, world, r, align);
      EXPECT_EQ(s.block % align, 0);
      for (const ShardPiece& p : s.pieces) {
        while (tensor < numels.size() && offset == numels[tensor]) ++tensor, offset = 0;
        ASSERT_EQ(p.tensor, tensor) << "round " << round << " rank " << r;
        ASSERT_EQ(p.offset, offset);
        ASSERT_GT(p.length, 0);
        ASSERT_LE(p.at + p.length, s.block);
        ASSERT_EQ(s.starts[p.tensor] % align, 0);
        ASSERT_EQ(p.offset % align, 0);
        ASSERT_EQ(p.at, s.starts[p.tensor] + p.offset - r * s.block);
        offset += p.length;
      }
    }
    while (tensor < numels.size() && offset == numels[tensor]) ++tensor, offset = 0;
    EXPECT_EQ(tensor, numels.size()) << "round " << round << ": elements left uncovered";
  }
}

}  // namespace
}  // namespace tandem
