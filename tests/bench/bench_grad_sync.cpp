// Communication overhead of gradient sync, measured in one run:
//   mpirun -np 2 build/tests/bench/bench_grad_sync [--steps N] [--batch B]
// On a ~25M-parameter MLP at the same per-rank batch it times
//   local     : forward + backward with no communication (what one rank alone pays),
//   sync-off  : + all-reduce of every bucket after backward (overlap off),
//   sync-on   : + buckets all-reduced while backward runs (overlap on),
// and prints each step time as a ratio to `local`, with the share of the
// all-reduce that overlap hid behind backward:
//   hidden = 1 - (wait in finish(), overlap on) / (wait in finish(), overlap off).
#include <torch/torch.h>

#include <chrono>
#include <cstdio>
#include <string>

#include "tandem/dist/grad_sync.h"
#include "tandem/dist/mpi_comm.h"
#include "tandem/dist/world.h"
#include "tandem/program.h"
#include "bench_args.h"

namespace {

struct Mlp : torch::nn::Module {
  explicit Mlp(int64_t width) {
    for (int i = 0; i < 6; ++i)
      layers.push_back(register_module("fc" + std::to_string(i), torch::nn::Linear(width, width)));
  }
  torch::Tensor forward(torch::Tensor x) {
    for (auto& l : layers) x = torch::relu(l(x));
    return x;
  }
  std::vector<torch::nn::Linear> layers;
};

struct Timing {
  double step_ms = 0, wait_ms = 0;
};

int run(tandem::World& world, int argc, char** argv) {
  int steps = 10, batch = 32;
  const auto take = [&](const std::string& key, const char* value) {
    if (key == "--steps")
      steps = std::atoi(value);
    else if (key == "--batch")
      batch = std::atoi(value);
    else
      return false;
    return true;
  };
  const char* usage = "[--steps N] [--batch B] (under mpirun -np 2)";
  if (const auto stop = bench::parse_flags(argc, argv, "bench_grad_sync", usage, take)) return *stop;
  // One intra-op thread per rank: the ranks share the machine's cores, as
  // they would share a node's, and timings stay comparable between modes.
  torch::set_num_threads(1);
  torch::manual_seed(0);
  const int64_t width = 2048;  // 6 x (2048 x 2048 + 2048) = 25.2M parameters
  auto net = std::make_shared<Mlp>(width);
  tandem::NamedTensors params;
  int64_t count = 0;
  for (const auto& p : net->named_parameters()) {
    params.emplace_back(p.key(), p.value());
    count += p.value().numel();
  }
  auto x = torch::randn({batch, width});
  tandem::MpiComm comm(world);

  auto measure = [&](tandem::GradSync* sync) {
    Timing t;
    for (int s = -2; s < steps; ++s) {  // two warm-up steps
      world.barrier();
      const auto t0 = std::chrono::steady_clock::now();
      for (auto& p : net->parameters()) p.mutable_grad() = at::Tensor();
      if (sync) sync->prepare(true);
      net->forward(x).pow(2).mean().backward();
      if (sync) sync->finish();
      const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      if (s >= 0) {
        t.step_ms += ms / steps;
        t.wait_ms += (sync ? sync->last_wait_ms() : 0) / steps;
      }
    }
    return t;
  };

  const auto local = measure(nullptr);
  tandem::GradSync off(comm, params, 25.0, /*overlap=*/false);
  const auto sync_off = measure(&off);
  tandem::GradSync on(comm, params, 25.0, /*overlap=*/true);
  const auto sync_on = measure(&on);

  if (world.rank() == 0) {
    std::printf(
        "gradient sync overhead: %d ranks (mpi backend), %.1fM parameters, batch %d per "
        "rank, %d buckets of 25 MiB, %d steps\n",
        world.size(), count / 1e6, batch, static_cast<int>(on.num_buckets()), steps);
    std::printf("  %-10s %10s %10s %14s\n", "mode", "ms/step", "vs local", "wait in finish");
    std::printf("  %-10s %10.1f %10.2f %14s\n", "local", local.step_ms, 1.0, "-");
    std::printf("  %-10s %10.1f %10.2f %11.1f ms\n", "sync-off", sync_off.step_ms, sync_off.step_ms / local.step_ms,
                sync_off.wait_ms);
    std::printf("  %-10s %10.1f %10.2f %11.1f ms\n", "sync-on", sync_on.step_ms, sync_on.step_ms / local.step_ms,
                sync_on.wait_ms);
    if (sync_off.wait_ms > 0)
      std::printf("  all-reduce hidden behind backward: %.0f%%\n", 100.0 * (1.0 - sync_on.wait_ms / sync_off.wait_ms));
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return tandem::run_program(argc, argv, run); }
