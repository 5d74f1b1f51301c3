#pragma once
// Where the ranks run, said in one line every rank can log: which host holds
// which ranks, and each rank's local rank there (what picks its GPU). On a
// multi-node job it is the first thing to read when placement goes wrong.
#include <string>
#include <vector>

#include "tandem/dist/world.h"

namespace tandem {

struct RankPlace {
  std::string host;
  int local_rank = 0;
  int gpus = 0;  // GPUs the rank sees
};

// One host's share of the job, hosts in the order of their first rank.
struct NodeRanks {
  std::string host;
  std::vector<int> ranks, local_ranks;  // ascending
  int gpus = 0;                         // as its first rank sees them
};
std::vector<NodeRanks> group_by_node(const std::vector<RankPlace>& ranks);

// "0-1, 4" for {0, 1, 4}: consecutive numbers as one run.
std::string number_runs(const std::vector<int>& ascending);

// "4 ranks on 2 nodes: node1 ranks 0-1 (local 0-1), node2 ranks 2-3 (local 0-1)".
std::string describe_layout(const std::vector<RankPlace>& ranks);

// Every rank's host, local rank and visible GPUs, gathered (a collective:
// call on every rank).
std::vector<RankPlace> gather_layout(World& world);

// Why SLURM_LOCALID (the launcher's local rank) disagrees with MPI's, or ""
// when it agrees or is unset. They differ when ranks were placed other than
// in Slurm's blocks, and then GPUs would be chosen by another numbering.
std::string slurm_local_id_mismatch(int mpi_local_rank, const char* slurm_localid);

}  // namespace tandem
