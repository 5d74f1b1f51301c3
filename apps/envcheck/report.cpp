#include "report.h"

#include <torch/torch.h>

#include <algorithm>
#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

#include "tandem/dist/cuda_info.h"
#include "tandem/dist/layout.h"
#include "tandem/dist/placement.h"
#include "tandem/dist/world.h"
#include "tandem/io/h5file.h"

extern char** environ;

namespace envcheck {
namespace {

// The variables that decide where ranks run and how they talk.
std::vector<std::string> relevant_environment() {
  static const char* prefixes[] = {"CUDA_VISIBLE_DEVICES", "NCCL_", "OMPI_", "PMIX_", "SLURM_"};
  std::vector<std::string> out;
  for (char** e = environ; *e; ++e) {
    const std::string var = *e;
    for (const char* p : prefixes)
      if (var.rfind(p, 0) == 0) out.push_back(var);
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::string rank_line(const tandem::World& world, const tandem::Placement& placement) {
  const char* visible = std::getenv("CUDA_VISIBLE_DEVICES");
  char line[256];
  std::snprintf(line, sizeof line, "  rank %-4d %-20s local %d/%d  node-leader %-3s device %-8s %s", world.rank(),
                world.host().c_str(), world.local_rank(), world.local_size(), world.local_rank() == 0 ? "yes" : "no",
                placement.torch_device().c_str(),
                visible ? (std::string("CUDA_VISIBLE_DEVICES=") + visible).c_str() : "");
  return line;
}

}  // namespace

void print_report(tandem::World& world, const tandem::Placement& placement) {
  constexpr size_t kLine = 256;
  std::string mine = rank_line(world, placement);
  mine.resize(kLine, '\0');
  std::string all(kLine * world.size(), '\0');
  world.allgather_bytes(mine.data(), kLine, all.data());
  const auto nodes = tandem::group_by_node(tandem::gather_layout(world));
  if (world.rank() != 0) return;

  auto& out = std::cout;
  out << "tandem envcheck\n\nSoftware\n"
      << "  LibTorch        " << TORCH_VERSION << " (CUDA " << (torch::cuda::is_available() ? "yes" : "no") << ")\n"
      << "  CUDA runtime    " << tandem::cuda_runtime_version() << "\n"
      << "  CUDA driver     " << tandem::cuda_driver_version() << "\n"
      << "  NCCL            " << tandem::nccl_version()
      << (tandem::cuda_built() ? "" : " (built without the CUDA toolkit)") << "\n"
      << "  MPI             " << world.mpi_library() << "\n"
      << "  HDF5            " << tandem::hdf5_version() << "\n\n"
      << "Ranks: " << world.size() << " on " << world.node_count() << " node(s), backend " << placement.backend << "\n";
  for (int r = 0; r < world.size(); ++r) out << all.c_str() + r * kLine << "\n";
  out << "\nNodes: " << nodes.size() << "\n";
  for (const auto& n : nodes) {
    char line[512];
    std::snprintf(line, sizeof line, "  %-20s %-6s %-12s local %-10s GPUs %d", n.host.c_str(),
                  n.ranks.size() == 1 ? "rank" : "ranks", tandem::number_runs(n.ranks).c_str(),
                  tandem::number_runs(n.local_ranks).c_str(), n.gpus);
    out << line << "\n";
  }

  const auto gpus = tandem::visible_gpus();
  out << "\nGPUs visible to rank 0: " << gpus.size() << "\n";
  for (const auto& g : gpus) {
    char line[256];
    std::snprintf(line, sizeof line, "  cuda:%d  %-28s %6.1f GiB  sm_%d%d  bf16 %-3s  %s", g.index, g.name.c_str(),
                  g.total_bytes / double(1 << 30), g.cc_major, g.cc_minor, g.bf16() ? "yes" : "no", g.bus_id.c_str());
    out << line << "\n";
  }
  out << "\nEnvironment\n";
  const auto env = relevant_environment();
  if (env.empty()) out << "  (no CUDA_VISIBLE_DEVICES, NCCL_*, OMPI_*, PMIX_* or SLURM_* set)\n";
  for (const auto& v : env) out << "  " << v << "\n";
  out << std::flush;
}

}  // namespace envcheck
