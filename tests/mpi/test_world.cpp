#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "tandem/dist/seed.h"
#include "tandem/dist/world.h"
#include "world_fixture.h"

namespace {

TEST(World, RanksOnOneHostShareANodeAndNumberThemselvesLocally) {
  auto& world = test_world();
  EXPECT_EQ(world.size(), 2);
  EXPECT_EQ(world.node_count(), 1);  // ctest runs both ranks on this machine
  EXPECT_EQ(world.local_size(), world.size());
  EXPECT_EQ(world.local_rank(), world.rank());
  EXPECT_FALSE(world.host().empty());
}

TEST(World, AllgatherBytesPlacesEachRanksBlock) {
  auto& world = test_world();
  const int mine = 100 + world.rank();
  std::vector<int> all(world.size());
  world.allgather_bytes(&mine, sizeof mine, all.data());
  for (int r = 0; r < world.size(); ++r) EXPECT_EQ(all[r], 100 + r);
}

TEST(Seeds, AnUnsetSeedIsDrawnOnceAndSharedByEveryRank) {
  auto& world = test_world();
  const uint64_t seed = tandem::shared_seed(world, -1);
  std::vector<uint64_t> all(world.size());
  world.allgather_bytes(&seed, sizeof seed, all.data());
  for (auto s : all) EXPECT_EQ(s, all[0]);
  // train.seed must be able to take it back.
  for (int i = 0; i < 64; ++i) EXPECT_LE(tandem::shared_seed(world, -1), uint64_t{INT64_MAX});
  EXPECT_EQ(tandem::shared_seed(world, 1234), 1234u);
}

TEST(Seeds, PerRankSeedsDifferAndAreReproducible) {
  EXPECT_EQ(tandem::rank_seed(42, 1), tandem::rank_seed(42, 1));
  EXPECT_NE(tandem::rank_seed(42, 0), tandem::rank_seed(42, 1));
  // seed + rank would make (42, 1) and (43, 0) collide; ours must not.
  EXPECT_NE(tandem::rank_seed(42, 1), tandem::rank_seed(43, 0));
}

}  // namespace
