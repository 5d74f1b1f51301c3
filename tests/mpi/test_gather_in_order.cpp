// gather_in_order on two real ranks: what each rank computed for its
// eval_shard comes back in dataset order, padding dropped, on every rank.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <stdexcept>

#include "tandem/data/eval_shard.h"
#include "tandem/dist/gather_in_order.h"
#include "tandem/dist/world.h"
#include "world_fixture.h"

namespace {

TEST(GatherInOrder, PutsEveryRanksRowsBackInDatasetOrderWithoutPadding) {
  auto& world = test_world();
  for (const int64_t n : {1, 4, 5}) {  // fewer samples than ranks, even, and one padded slot
    const auto shard = tandem::eval_shard(n, world.size(), world.rank());
    const auto slots = static_cast<int64_t>(shard.indices.size());
    // Row = (sample index, 100 + rank that made it); padding repeats a sample.
    auto mine = torch::empty({slots, 2}, torch::kLong);
    for (int64_t i = 0; i < slots; ++i) {
      mine[i][0] = shard.indices[i];
      mine[i][1] = 100 + world.rank();
    }
    const at::Tensor all = tandem::gather_in_order(world, n, mine);
    ASSERT_EQ(all.sizes(), (std::vector<int64_t>{n, 2})) << "n = " << n;
    for (int64_t i = 0; i < n; ++i) {
      EXPECT_EQ(all[i][0].item<int64_t>(), i) << "n = " << n;
      EXPECT_EQ(all[i][1].item<int64_t>(), 100 + i % world.size()) << "made by rank i mod W";
    }
    // One value per sample works alike.
    const at::Tensor flat = tandem::gather_in_order(world, n, mine.select(1, 0).to(torch::kFloat));
    EXPECT_TRUE(torch::equal(flat, torch::arange(n, torch::kFloat)));
  }
}

TEST(GatherInOrder, RefusesAShareOfTheWrongSize) {
  auto& world = test_world();
  EXPECT_THROW(tandem::gather_in_order(world, 5, torch::zeros({7})), std::invalid_argument);
}

}  // namespace
