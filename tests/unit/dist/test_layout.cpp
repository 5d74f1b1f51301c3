#include <gtest/gtest.h>

#include "tandem/dist/layout.h"

namespace {

TEST(Layout, OneNodeOneRank) { EXPECT_EQ(tandem::describe_layout({{"vm", 0}}), "1 rank on 1 node: vm rank 0 (local 0)"); }

TEST(Layout, TwoNodesInSlurmsBlocks) {
  EXPECT_EQ(tandem::describe_layout({{"node1", 0}, {"node1", 1}, {"node2", 0}, {"node2", 1}}),
            "4 ranks on 2 nodes: node1 ranks 0-1 (local 0-1), node2 ranks 2-3 (local 0-1)");
  EXPECT_EQ(tandem::describe_layout({{"node1", 0}, {"node2", 0}}),
            "2 ranks on 2 nodes: node1 rank 0 (local 0), node2 rank 1 (local 0)");
}

TEST(Layout, RoundRobinPlacementShowsAsSeparateRuns) {
  // mpirun --map-by node: ranks alternate between hosts.
  EXPECT_EQ(tandem::describe_layout({{"a", 0}, {"b", 0}, {"a", 1}, {"b", 1}, {"a", 2}}),
            "5 ranks on 2 nodes: a ranks 0, 2, 4 (local 0-2), b ranks 1, 3 (local 0-1)");
}

TEST(Layout, SlurmLocalIdMustAgreeWithMpis) {
  EXPECT_EQ(tandem::slurm_local_id_mismatch(1, nullptr), "");
  EXPECT_EQ(tandem::slurm_local_id_mismatch(1, ""), "");
  EXPECT_EQ(tandem::slurm_local_id_mismatch(1, "1"), "");
  EXPECT_EQ(tandem::slurm_local_id_mismatch(0, "1"),
            "SLURM_LOCALID is 1 but MPI's local rank is 0: the launcher placed ranks other than in Slurm's blocks; "
            "GPUs follow MPI's local rank");
}

}  // namespace

namespace {

TEST(Layout, NodesGroupTheirRanksAndKeepTheFirstRanksGpuCount) {
  const auto nodes = tandem::group_by_node({{"a", 0, 4}, {"b", 1, 2}, {"a", 1, 4}, {"b", 0, 2}});
  ASSERT_EQ(nodes.size(), 2u);
  EXPECT_EQ(nodes[0].host, "a");
  EXPECT_EQ(nodes[0].ranks, (std::vector<int>{0, 2}));
  EXPECT_EQ(nodes[0].local_ranks, (std::vector<int>{0, 1}));
  EXPECT_EQ(nodes[0].gpus, 4);
  EXPECT_EQ(nodes[1].ranks, (std::vector<int>{1, 3}));
  EXPECT_EQ(nodes[1].local_ranks, (std::vector<int>{0, 1}));
  EXPECT_EQ(nodes[1].gpus, 2);
  EXPECT_EQ(tandem::number_runs({0, 1, 2, 5, 7, 8}), "0-2, 5, 7-8");
  EXPECT_EQ(tandem::number_runs({}), "");
}

}  // namespace
