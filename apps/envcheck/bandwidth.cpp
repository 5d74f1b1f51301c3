#include "bandwidth.h"

#include <torch/torch.h>

#include <chrono>
#include <cstdio>
#include <functional>
#include <iostream>
#include <string>
#include <vector>

#include "tandem/dist/communicator.h"
#include "tandem/dist/node_links.h"
#include "tandem/dist/placement.h"
#include "tandem/dist/world.h"

namespace envcheck {
namespace {

struct Collective {
  std::string name;
  // nccl-tests' factors: the share of the data each rank must send and receive.
  std::function<double(int n)> bus_factor;
  // Issues one operation on a buffer of `count` floats per rank.
  std::function<void(torch::Tensor& buf, torch::Tensor& out)> run;
};

// 8 B, 32 B, ... up to max_mb MiB: nccl-tests' ladder.
std::vector<int64_t> sizes(int64_t max_mb) {
  std::vector<int64_t> out;
  for (int64_t bytes = 8; bytes < max_mb << 20; bytes *= 4) out.push_back(bytes);
  out.push_back(max_mb << 20);
  return out;
}

void print_header() {
  std::printf("%14s %12s %12s %12s %12s\n", "size(B)", "count", "time(us)", "algbw(GB/s)", "busbw(GB/s)");
}

void print_row(int64_t bytes, int64_t count, double us, double algbw, double busbw) {
  std::printf("%14lld %12lld %12.1f %12.3f %12.3f\n", static_cast<long long>(bytes), static_cast<long long>(count), us,
              algbw, busbw);
}

}  // namespace

void print_node_bandwidth(tandem::World& world, int64_t max_mb, int64_t iters) {
  if (world.node_count() < 2) return;
  using Link = tandem::NodeLinks::Link;
  tandem::NodeLinks links(world);
  const bool main = world.rank() == 0;
  // Rank 0 speaks for its own node; every node measures at once, as in training.
  for (Link link : {Link::within_node, Link::between_nodes}) {
    // One rank on a node: nothing within it to measure (nodes may differ).
    const int n = links.size(link);
    const bool measure = n > 1 && links.member(link);
    if (main && measure) {
      if (link == Link::within_node)
        std::cout << "\nBandwidth within a node: allreduce(sum), f32, the " << n << " ranks of " << world.host();
      else
        std::cout << "\nBandwidth between nodes: allreduce(sum), f32, one rank on each of " << n << " nodes";
      std::cout << ", MPI, " << iters << " iterations per size\n";
      print_header();
    }
    if (measure) {
      double bus_sum = 0;
      int rows = 0;
      for (int64_t bytes : sizes(max_mb)) {
        const double us = links.time_allreduce(link, bytes / 4, iters);
        const double algbw = double(bytes) / us / 1e3;
        const double busbw = algbw * 2.0 * (n - 1) / n;
        bus_sum += busbw;
        ++rows;
        if (main) print_row(bytes, bytes / 4, us, algbw, busbw);
      }
      if (main) std::printf("  average busbw: %.3f GB/s\n", bus_sum / rows);
    }
    world.barrier();
  }
  std::fflush(stdout);
}

void print_bandwidth(tandem::World& world, tandem::Communicator& comm, const tandem::Placement& placement,
                     int64_t max_mb, int64_t iters) {
  const torch::Device device(placement.torch_device());
  const int size = world.size();
  const std::vector<Collective> collectives = {
      {"allreduce(sum)", [](int n) { return 2.0 * (n - 1) / n; },
       [&](torch::Tensor& buf, torch::Tensor&) { comm.allreduce(buf, tandem::ReduceOp::Sum); }},
      {"allgather", [](int n) { return double(n - 1) / n; },
       [&](torch::Tensor& buf, torch::Tensor& out) { comm.allgather(buf, out); }},
      {"broadcast", [](int) { return 1.0; }, [&](torch::Tensor& buf, torch::Tensor&) { comm.broadcast(buf, 0); }},
  };
  auto sync = [&] {
    if (placement.cuda) torch::cuda::synchronize();
  };

  for (const auto& c : collectives) {
    if (world.rank() == 0) {
      std::cout << "\nBandwidth: " << c.name << ", f32, " << size << " ranks, " << comm.backend() << " backend, "
                << iters << " iterations per size\n";
      print_header();
    }
    double bus_sum = 0;
    int rows = 0;
    for (int64_t bytes : sizes(max_mb)) {
      const int64_t count = bytes / 4;
      auto buf = torch::ones({count}, torch::TensorOptions().device(device));
      auto out = torch::empty({size * count}, buf.options());
      // allgather's traffic is the gathered result, as nccl-tests counts it.
      const double counted = c.name == "allgather" ? double(bytes) * size : double(bytes);
      for (int w = 0; w < 3; ++w) c.run(buf, out);
      sync();
      world.barrier();
      const auto t0 = std::chrono::steady_clock::now();
      for (int64_t i = 0; i < iters; ++i) c.run(buf, out);
      sync();
      double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() / iters;
      // The slowest rank sets the pace of a collective.
      auto t = torch::full({1}, us, torch::TensorOptions().dtype(torch::kFloat64).device(device));
      comm.allreduce(t, tandem::ReduceOp::Max);
      us = t.item<double>();
      const double algbw = counted / us / 1e3;
      const double busbw = algbw * c.bus_factor(size);
      bus_sum += busbw;
      ++rows;
      if (world.rank() == 0) print_row(bytes, count, us, algbw, busbw);
    }
    if (world.rank() == 0) std::printf("  average busbw: %.3f GB/s\n", bus_sum / rows);
  }
  std::fflush(stdout);
}

}  // namespace envcheck
