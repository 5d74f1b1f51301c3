// The NCCL backend against the same hand-computed values as the MPI one. It
// needs a GPU that LibTorch can use; without one it skips, saying why.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "tandem/dist/communicator.h"
#include "tandem/dist/world.h"
#include "world_fixture.h"

#if TANDEM_HAVE_NCCL
#include "tandem/dist/nccl_comm.h"
#endif

namespace {

TEST(Nccl, CollectivesOnTheGpuMatchHandComputedValues) {
#if !TANDEM_HAVE_NCCL
  GTEST_SKIP() << "built without the CUDA toolkit and NCCL (TANDEM_CUDA)";
#else
  if (!torch::cuda::is_available())
    GTEST_SKIP() << "no GPU visible to LibTorch (CPU-only LibTorch, or CUDA_VISIBLE_DEVICES empty)";
  auto& world = test_world();
  const int device = world.local_rank() % static_cast<int>(torch::cuda::device_count());
  tandem::NcclComm comm(world, device);
  const int r = world.rank(), n = world.size();
  const int64_t tri = int64_t{n} * (n + 1) / 2;
  for (auto type : {torch::kFloat32, torch::kFloat16, torch::kBFloat16, torch::kFloat64, torch::kInt64}) {
    auto opts = torch::TensorOptions().dtype(type).device(torch::kCUDA, device);
    auto v = (torch::arange(1000, torch::kLong) % 7 + 1).to(opts);
    auto sum = v * (r + 1);
    comm.allreduce(sum, tandem::ReduceOp::Sum);
    EXPECT_TRUE(torch::equal(sum, v * tri)) << c10::toString(type);
    auto avg = v * (2 * (r + 1));
    comm.allreduce(avg, tandem::ReduceOp::Avg);
    EXPECT_TRUE(torch::equal(avg, v * (n + 1))) << c10::toString(type);
    auto mx = v * (r + 1);
    comm.allreduce(mx, tandem::ReduceOp::Max);
    EXPECT_TRUE(torch::equal(mx, v * n)) << c10::toString(type);
    auto b = v * (r + 1);
    comm.broadcast(b, 0);
    EXPECT_TRUE(torch::equal(b, v));
    auto out = torch::empty({n, 1000}, opts);
    comm.allgather(v * (r + 1), out);
    EXPECT_TRUE(torch::equal(out[n - 1], v * n));
  }
  // Async work overlaps compute: queue several, then wait in reverse.
  std::vector<torch::Tensor> ts;
  std::vector<tandem::WorkHandle> works;
  for (int i = 0; i < 4; ++i) {
    ts.push_back(torch::full({1 << 20}, float(i + 1), torch::TensorOptions().device(torch::kCUDA, device)));
    works.push_back(comm.allreduce_async(ts.back(), tandem::ReduceOp::Sum));
  }
  comm.barrier();
  for (auto it = works.rbegin(); it != works.rend(); ++it) (*it)->wait();
  for (int i = 0; i < 4; ++i) EXPECT_EQ(ts[i][7].item<float>(), float(i + 1) * n);
#endif
}

}  // namespace
