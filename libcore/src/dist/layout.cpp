#include "tandem/dist/layout.h"

#include <algorithm>
#include <cstring>

#include "tandem/dist/cuda_info.h"

namespace tandem {

std::string number_runs(const std::vector<int>& numbers) {
  std::string out;
  for (size_t i = 0; i < numbers.size();) {
    size_t j = i;
    while (j + 1 < numbers.size() && numbers[j + 1] == numbers[j] + 1) ++j;
    if (!out.empty()) out += ", ";
    out += std::to_string(numbers[i]);
    if (j > i) out += "-" + std::to_string(numbers[j]);
    i = j + 1;
  }
  return out;
}

std::vector<NodeRanks> group_by_node(const std::vector<RankPlace>& ranks) {
  std::vector<NodeRanks> nodes;
  for (int r = 0; r < static_cast<int>(ranks.size()); ++r) {
    auto it = std::find_if(nodes.begin(), nodes.end(), [&](const NodeRanks& n) { return n.host == ranks[r].host; });
    if (it == nodes.end()) it = nodes.insert(nodes.end(), NodeRanks{ranks[r].host, {}, {}, ranks[r].gpus});
    it->ranks.push_back(r);
    it->local_ranks.push_back(ranks[r].local_rank);
  }
  for (auto& n : nodes) std::sort(n.local_ranks.begin(), n.local_ranks.end());
  return nodes;
}

std::string describe_layout(const std::vector<RankPlace>& ranks) {
  const auto nodes = group_by_node(ranks);
  std::string out = std::to_string(ranks.size()) + (ranks.size() == 1 ? " rank" : " ranks") + " on " +
                    std::to_string(nodes.size()) + (nodes.size() == 1 ? " node: " : " nodes: ");
  for (size_t h = 0; h < nodes.size(); ++h)
    out += (h ? ", " : "") + nodes[h].host + (nodes[h].ranks.size() == 1 ? " rank " : " ranks ") +
           number_runs(nodes[h].ranks) + " (local " + number_runs(nodes[h].local_ranks) + ")";
  return out;
}

std::vector<RankPlace> gather_layout(World& world) {
  // Fixed-size blocks: host names are at most 255 bytes (HOST_NAME_MAX).
  constexpr size_t kHost = 256;
  struct Block {
    char host[kHost];
    int local_rank, gpus;
  };
  Block mine{};
  std::strncpy(mine.host, world.host().c_str(), kHost - 1);
  mine.local_rank = world.local_rank();
  mine.gpus = static_cast<int>(visible_gpus().size());
  std::vector<Block> all(static_cast<size_t>(world.size()));
  world.allgather_bytes(&mine, sizeof(Block), all.data());
  std::vector<RankPlace> out;
  for (const auto& b : all) out.push_back({b.host, b.local_rank, b.gpus});
  return out;
}

std::string slurm_local_id_mismatch(int mpi_local_rank, const char* slurm_localid) {
  if (!slurm_localid || !*slurm_localid) return "";
  if (std::to_string(mpi_local_rank) == slurm_localid) return "";
  return "SLURM_LOCALID is " + std::string(slurm_localid) + " but MPI's local rank is " +
         std::to_string(mpi_local_rank) +
         ": the launcher placed ranks other than in Slurm's blocks; GPUs follow MPI's local rank";
}

}  // namespace tandem
