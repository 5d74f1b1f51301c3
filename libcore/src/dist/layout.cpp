#include "tandem/dist/layout.h"

#include <algorithm>
#include <cstring>
#include <map>

namespace tandem {
namespace {

// "0-1, 4" for {0, 1, 4}: consecutive numbers as one run.
std::string runs(const std::vector<int>& numbers) {
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

}  // namespace

std::string describe_layout(const std::vector<RankPlace>& ranks) {
  std::vector<std::string> hosts;
  std::map<std::string, std::pair<std::vector<int>, std::vector<int>>> on;  // host -> ranks, local ranks
  for (int r = 0; r < static_cast<int>(ranks.size()); ++r) {
    auto& [global, local] = on[ranks[r].host];
    if (global.empty()) hosts.push_back(ranks[r].host);
    global.push_back(r);
    local.push_back(ranks[r].local_rank);
  }
  std::string out = std::to_string(ranks.size()) + (ranks.size() == 1 ? " rank" : " ranks") + " on " +
                    std::to_string(hosts.size()) + (hosts.size() == 1 ? " node: " : " nodes: ");
  for (size_t h = 0; h < hosts.size(); ++h) {
    auto [global, local] = on[hosts[h]];
    std::sort(local.begin(), local.end());
    out += (h ? ", " : "") + hosts[h] + (global.size() == 1 ? " rank " : " ranks ") + runs(global) + " (local " +
           runs(local) + ")";
  }
  return out;
}

std::vector<RankPlace> gather_layout(World& world) {
  // Fixed-size blocks: host names are at most 255 bytes (HOST_NAME_MAX).
  constexpr size_t kHost = 256;
  struct Block {
    char host[kHost];
    int local_rank;
  };
  Block mine{};
  std::strncpy(mine.host, world.host().c_str(), kHost - 1);
  mine.local_rank = world.local_rank();
  std::vector<Block> all(static_cast<size_t>(world.size()));
  world.allgather_bytes(&mine, sizeof(Block), all.data());
  std::vector<RankPlace> out;
  for (const auto& b : all) out.push_back({b.host, b.local_rank});
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
