// Each collective against values computed by hand: rank r contributes
// (r + 1) * v for a base vector v of small integers, so sums, means and maxima
// are exact in every dtype, halves included.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "tandem/dist/mpi_comm.h"
#include "tandem/dist/world.h"
#include "world_fixture.h"
#include "rank_sums.h"

using tandem::MpiComm;
using tandem::ReduceOp;

namespace {

using tandem::testing::triangle;

class Collectives : public ::testing::TestWithParam<c10::ScalarType> {};

torch::Tensor base(int64_t n, c10::ScalarType type) { return (torch::arange(n, torch::kLong) % 7 + 1).to(type); }

TEST_P(Collectives, AllreduceSumAvgMax) {
  auto& world = test_world();
  MpiComm comm(world);
  const auto type = GetParam();
  const int r = world.rank(), n = world.size();
  for (int64_t len : {1, 5, 1000}) {
    auto v = base(len, type);
    auto sum = v * (r + 1);
    comm.allreduce(sum, ReduceOp::Sum);
    EXPECT_TRUE(torch::equal(sum, v * triangle(n))) << c10::toString(type) << " len " << len;

    auto mx = v * (r + 1);
    comm.allreduce(mx, ReduceOp::Max);
    EXPECT_TRUE(torch::equal(mx, v * n));

    // Every rank holds 2 * (r + 1) * v; the mean is (n + 1) * v exactly.
    auto avg = v * (2 * (r + 1));
    comm.allreduce(avg, ReduceOp::Avg);
    EXPECT_TRUE(torch::equal(avg, v * (n + 1))) << c10::toString(type);
  }
}

TEST_P(Collectives, BroadcastFromLastRank) {
  auto& world = test_world();
  MpiComm comm(world);
  const int root = world.size() - 1;
  auto t = base(33, GetParam()) * (world.rank() + 1);
  comm.broadcast(t, root);
  EXPECT_TRUE(torch::equal(t, base(33, GetParam()) * (root + 1)));
}

TEST_P(Collectives, AllgatherPlacesBlocksByRank) {
  auto& world = test_world();
  MpiComm comm(world);
  const auto type = GetParam();
  auto in = base(4, type) * (world.rank() + 1);
  auto out = torch::zeros({world.size(), 4}, torch::TensorOptions().dtype(type));
  comm.allgather(in, out);
  for (int r = 0; r < world.size(); ++r) EXPECT_TRUE(torch::equal(out[r], base(4, type) * (r + 1))) << "block " << r;
}

// Rank r's input holds, at block b, (r + 1) * (b + 1) * v: block b reduced
// over the ranks is triangle(n) * (b + 1) * v summed, n * (b + 1) * v at its
// largest; every rank b gets block b, and nothing outside its output moves.
TEST_P(Collectives, ReduceScatterGivesEachRankItsBlockReduced) {
  auto& world = test_world();
  MpiComm comm(world);
  const auto type = GetParam();
  const int r = world.rank(), n = world.size();
  for (int64_t len : {1, 5, 1000}) {
    const auto v = base(len, type);
    const auto blocks = (torch::arange(1, n + 1, torch::kLong).to(type).view({n, 1}) * v.view({1, len}));
    for (ReduceOp op : {ReduceOp::Sum, ReduceOp::Max, ReduceOp::Avg}) {
      // Avg: 2 * (r + 1) per rank, whose mean is n + 1, exact in every dtype.
      const auto input = (blocks * (op == ReduceOp::Avg ? 2 * (r + 1) : r + 1)).contiguous();
      auto out = torch::full({len + 2}, -1, torch::TensorOptions().dtype(type));
      comm.reduce_scatter(input, out.narrow(0, 1, len), op);
      const int64_t factor = op == ReduceOp::Sum ? triangle(n) : op == ReduceOp::Max ? n : n + 1;
      EXPECT_TRUE(torch::equal(out.narrow(0, 1, len), v * (r + 1) * factor))
          << c10::toString(type) << " len " << len << " " << tandem::to_string(op);
      EXPECT_EQ(out[0].item<double>(), -1);
      EXPECT_EQ(out[len + 1].item<double>(), -1);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Dtypes, Collectives,
                         ::testing::Values(torch::kFloat32, torch::kFloat16, torch::kBFloat16, torch::kFloat64,
                                           torch::kInt64),
                         [](const auto& info) { return std::string(c10::toString(info.param)); });

TEST(CollectivesMisc, IntegerAverageTruncates) {
  auto& world = test_world();
  MpiComm comm(world);
  auto t = torch::full({3}, world.rank() == 0 ? 1 : 0, torch::kLong);
  comm.allreduce(t, ReduceOp::Avg);
  // sum is 1 over any world size > 1: 1 / n truncates to 0.
  EXPECT_TRUE(torch::equal(t, torch::full({3}, world.size() == 1 ? 1 : 0, torch::kLong)));
}

TEST(CollectivesAsync, ManyInFlightCompleteInOrder) {
  auto& world = test_world();
  MpiComm comm(world);
  std::vector<torch::Tensor> ts;
  std::vector<tandem::WorkHandle> works;
  for (int i = 0; i < 8; ++i) {
    ts.push_back(torch::full({1024}, float(i + 1) * (world.rank() + 1)));
    works.push_back(comm.allreduce_async(ts.back(), ReduceOp::Sum));
  }
  works.push_back(comm.barrier_async());
  for (auto it = works.rbegin(); it != works.rend(); ++it) (*it)->wait();
  for (int i = 0; i < 8; ++i)
    EXPECT_TRUE(torch::equal(ts[i], torch::full({1024}, float(i + 1) * triangle(world.size()))));
}

TEST(CollectivesAsync, HalfStagingCopiesBackOnWait) {
  auto& world = test_world();
  MpiComm comm(world);
  auto t = torch::full({16}, 1.5, torch::kFloat16);
  auto work = comm.allreduce_async(t, ReduceOp::Sum);
  work->wait();
  EXPECT_TRUE(work->done());
  EXPECT_TRUE(torch::equal(t, torch::full({16}, 1.5 * world.size(), torch::kFloat16)));
}

// A collective that has finished holds nothing of its tensors, although its
// work lives on in the watchdog's list until the next poll (up to a second):
// ZeRO's gathered flats, held so, outlived their step and grew its peak.
TEST(CollectivesLifetime, AFinishedCollectiveKeepsNoHoldOnItsTensors) {
  auto& world = test_world();
  MpiComm comm(world);
  auto part = torch::ones({1000});
  auto whole = torch::empty({world.size() * 1000});
  comm.allgather(part, whole);
  comm.allreduce(part, ReduceOp::Sum);
  EXPECT_EQ(part.use_count(), 1);
  EXPECT_EQ(whole.use_count(), 1);
}

}  // namespace
