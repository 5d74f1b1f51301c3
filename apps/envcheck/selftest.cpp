#include "selftest.h"

#include <torch/torch.h>

#include <cstdio>
#include <functional>
#include <iostream>
#include <string>
#include <vector>

#include "tandem/dist/communicator.h"
#include "tandem/dist/placement.h"
#include "tandem/dist/world.h"
#include "tandem/obs/log.h"

namespace envcheck {
namespace {

// Rank r contributes (r + 1) * v, v[i] = i % 7 + 1: sums, maxima, broadcasts
// and gathers are small integers, exact in every dtype including f16 and bf16,
// so on a few ranks any difference at all is a fault, not rounding. Floating
// sums and averages on many ranks are the exception (reduced_as_expected).
torch::Tensor pattern(int64_t n, c10::ScalarType type, const torch::Device& device) {
  return (torch::arange(n, torch::TensorOptions().dtype(torch::kLong).device(device)) % 7 + 1).to(type);
}

std::vector<int64_t> element_counts(int64_t max_mb, int64_t elem_size) {
  std::vector<int64_t> counts = {1, 3, 1000};  // odd sizes catch remainder handling
  for (int64_t bytes = 64 << 10; bytes <= max_mb << 20; bytes *= 16) counts.push_back(bytes / elem_size);
  if (counts.back() != (max_mb << 20) / elem_size) counts.push_back((max_mb << 20) / elem_size);
  return counts;
}

struct Check {
  std::string name;
  // Runs the collective on `n` elements; true when the result is right.
  std::function<bool(int64_t n, c10::ScalarType type)> run;
};

}  // namespace

// Floating-point sums and averages are rounded on the way by healthy
// hardware: NCCL rounds every partial sum to the element type (and ncclAvg
// premultiplies by 1/n in it), so f16 sums of these values round from 24
// ranks on and bf16 ones from 9. Each rounding is at most half a unit of the
// type's precision relative to a partial sum no larger than the result:
// within (ranks + 1) / 2 units, relative, whatever order the ring adds in.
// Maxima, broadcasts, gathers and integers stay exact.
bool reduced_as_expected(const at::Tensor& got, const at::Tensor& want, tandem::ReduceOp op, int ranks) {
  if (op == tandem::ReduceOp::Max || !got.is_floating_point()) return torch::equal(got, want);
  const double eps = got.scalar_type() == torch::kBFloat16 ? 1.0 / 128
                     : got.scalar_type() == torch::kHalf   ? 1.0 / 1024
                     : got.scalar_type() == torch::kFloat  ? 1.0 / (1 << 23)
                                                           : 1.0 / (1ll << 52);
  return torch::allclose(got.to(torch::kDouble), want.to(torch::kDouble), (ranks + 1) / 2.0 * eps, 0.0);
}

int run_selftest(tandem::World& world, tandem::Communicator& comm, const tandem::Placement& placement, int64_t max_mb) {
  const torch::Device device(placement.torch_device());
  const int r = world.rank(), size = world.size();
  const int64_t tri = int64_t{size} * (size + 1) / 2;
  const int root = size - 1;
  using tandem::ReduceOp;

  struct AllreduceCase {
    const char* name;
    ReduceOp op;
    int64_t in_scale;  // rank r sends (r + 1) * in_scale * v
    int64_t expected;  // ... and every rank gets expected * v
  };
  const AllreduceCase allreduces[] = {{"allreduce(sum)", ReduceOp::Sum, 1, tri},
                                      {"allreduce(avg)", ReduceOp::Avg, 2, size + 1},
                                      {"allreduce(max)", ReduceOp::Max, 1, size}};
  std::vector<Check> checks;
  for (const auto& c : allreduces)
    checks.push_back({c.name, [&, c](int64_t n, c10::ScalarType t) {
                        auto v = pattern(n, t, device);
                        auto x = v * ((r + 1) * c.in_scale);
                        comm.allreduce(x, c.op);
                        return reduced_as_expected(x, v * c.expected, c.op, size);
                      }});
  const std::vector<Check> others = {
      {"broadcast",
       [&](int64_t n, c10::ScalarType t) {
         auto v = pattern(n, t, device);
         auto x = v * (r + 1);
         comm.broadcast(x, root);
         return torch::equal(x, v * (root + 1));
       }},
      {"allgather",
       [&](int64_t n, c10::ScalarType t) {
         auto v = pattern(n, t, device);
         auto out = torch::empty({size, n}, v.options());
         comm.allgather(v * (r + 1), out);
         auto expected = torch::arange(1, size + 1, v.options()).unsqueeze(1) * v.unsqueeze(0);
         return torch::equal(out, expected);
       }},
  };
  checks.insert(checks.end(), others.begin(), others.end());
  const std::vector<c10::ScalarType> types = {torch::kFloat32, torch::kFloat16, torch::kBFloat16, torch::kFloat64,
                                              torch::kInt64};

  if (r == 0)
    std::cout << "\nSelf-test: " << checks.size() << " collectives x " << types.size() << " dtypes, 1 element to "
              << max_mb << " MiB, " << size << " ranks, " << comm.backend() << " backend\n";
  int failures = 0;
  for (const auto& check : checks) {
    for (auto type : types) {
      const auto counts = element_counts(max_mb, c10::elementSize(type));
      int failed_here = 0;
      std::string first_bad;
      for (int64_t n : counts) {
        if (!check.run(n, type)) {
          if (!failed_here++) first_bad = std::to_string(n);
        }
      }
      if (failed_here)
        tandem::log::error("self-test: ", check.name, " ", c10::toString(type), " wrong at ", first_bad, " elements (",
                           failed_here, " of ", counts.size(), " sizes)");
      failures += failed_here;
      if (r == 0) {
        char line[160];
        std::snprintf(line, sizeof line, "  %-16s %-9s %zu sizes  %s", check.name.c_str(), c10::toString(type),
                      counts.size(), failed_here ? "FAILED on rank 0" : "ok");
        std::cout << line << "\n";
      }
    }
  }
  // Each rank checked its own copy; the verdict must count every rank's.
  auto total = torch::full({1}, failures, torch::TensorOptions().dtype(torch::kLong).device(device));
  comm.allreduce(total, ReduceOp::Sum);
  const int all_failures = static_cast<int>(total.item<int64_t>());
  if (r == 0)
    std::cout << (all_failures ? "Self-test FAILED: " + std::to_string(all_failures) +
                                     " wrong results over all ranks (see rank logs)\n"
                               : std::string("Self-test passed on every rank\n"))
              << std::flush;
  return all_failures;
}

}  // namespace envcheck
