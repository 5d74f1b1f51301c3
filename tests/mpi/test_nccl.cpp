// The NCCL backend against the same hand-computed values as the MPI one. It
// needs a GPU that LibTorch can use; without one it skips, saying why.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "tandem/dist/communicator.h"
#include "tandem/dist/world.h"
#include "world_fixture.h"

#if TANDEM_HAVE_NCCL
#include "tandem/dist/mpi_comm.h"
#include "tandem/dist/nccl_comm.h"
#endif

namespace {

// Why the NCCL tests cannot run here; empty when they can.
std::string why_no_nccl() {
#if !TANDEM_HAVE_NCCL
  return "built without the CUDA toolkit and NCCL (TANDEM_CUDA)";
#else
  if (!torch::cuda::is_available())
    return "no GPU visible to LibTorch (CPU-only LibTorch, or CUDA_VISIBLE_DEVICES empty)";
  return "";
#endif
}

TEST(Nccl, CollectivesOnTheGpuMatchHandComputedValues) {
  if (const std::string why = why_no_nccl(); !why.empty()) GTEST_SKIP() << why;
#if TANDEM_HAVE_NCCL
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
    // Block b of rank k holds 2 (k + 1)(b + 1) v: rank r gets block r,
    // summed tri 2 (r + 1) v, averaged (n + 1)(r + 1) v, at most 2 n (r + 1) v.
    const auto blocks = torch::arange(1, n + 1, torch::kLong).to(opts).view({n, 1}) * v.view({1, -1}) * (2 * (r + 1));
    auto part = torch::empty({1000}, opts);
    comm.reduce_scatter(blocks, part, tandem::ReduceOp::Sum);
    EXPECT_TRUE(torch::equal(part, v * (2 * tri * (r + 1)))) << c10::toString(type);
    comm.reduce_scatter(blocks, part, tandem::ReduceOp::Avg);
    EXPECT_TRUE(torch::equal(part, v * ((n + 1) * (r + 1)))) << c10::toString(type);
    comm.reduce_scatter(blocks, part, tandem::ReduceOp::Max);
    EXPECT_TRUE(torch::equal(part, v * (2 * n * (r + 1)))) << c10::toString(type);
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

// Channels-last tensors (carotid's convolution weights and their gradients)
// on the GPU, through both backends a GPU rank may use (NCCL, and MPI staging
// through pinned host memory): reduced in place with their values and layout
// kept, broadcast, gathered in memory order; and a strided view refused with
// the contract's message on every rank before any of them enters NCCL.
TEST(Nccl, ChannelsLastOnTheGpuOnBothBackendsAndStridedViewsRefused) {
  if (const std::string why = why_no_nccl(); !why.empty()) GTEST_SKIP() << why;
#if TANDEM_HAVE_NCCL
  auto& world = test_world();
  const int device = world.local_rank() % static_cast<int>(torch::cuda::device_count());
  const int r = world.rank(), n = world.size();
  const int64_t tri = int64_t{n} * (n + 1) / 2;
  tandem::NcclComm nccl(world, device);
  tandem::MpiComm mpi(world, c10::Device(c10::kCUDA, static_cast<c10::DeviceIndex>(device)));
  for (tandem::Communicator* comm : std::vector<tandem::Communicator*>{&nccl, &mpi}) {
    for (auto type : {torch::kFloat32, torch::kFloat16, torch::kBFloat16}) {
      const std::string what = comm->backend() + " " + c10::toString(type);
      const auto opts = torch::TensorOptions().dtype(type).device(torch::kCUDA, device);
      // Small integers (at most 7 x 36 on 8 ranks): exact in every type here.
      const auto v4 = (torch::arange(2 * 3 * 4 * 5, torch::kLong) % 7 + 1)
                          .reshape({2, 3, 4, 5})
                          .to(opts)
                          .contiguous(at::MemoryFormat::ChannelsLast);
      const auto v5 = (torch::arange(2 * 3 * 2 * 4 * 5, torch::kLong) % 7 + 1)
                          .reshape({2, 3, 2, 4, 5})
                          .to(opts)
                          .contiguous(at::MemoryFormat::ChannelsLast3d);
      ASSERT_FALSE(v4.is_contiguous()) << what;
      ASSERT_FALSE(v5.is_contiguous()) << what;

      auto sum = v4 * (r + 1);
      const void* where = sum.data_ptr();
      comm->allreduce(sum, tandem::ReduceOp::Sum);
      EXPECT_TRUE(torch::equal(sum, v4 * tri)) << what;
      EXPECT_TRUE(sum.is_contiguous(at::MemoryFormat::ChannelsLast)) << what;
      EXPECT_EQ(sum.data_ptr(), where) << what << ": reduced in place";
      auto sum5 = v5 * (r + 1);
      comm->allreduce(sum5, tandem::ReduceOp::Sum);
      EXPECT_TRUE(torch::equal(sum5, v5 * tri)) << what;
      EXPECT_TRUE(sum5.is_contiguous(at::MemoryFormat::ChannelsLast3d)) << what;

      auto b = v4 * (r + 1);
      comm->broadcast(b, n - 1);
      EXPECT_TRUE(torch::equal(b, v4 * n)) << what;
      EXPECT_TRUE(b.is_contiguous(at::MemoryFormat::ChannelsLast)) << what;

      // Block k of the output is rank k's input in its memory order (N, H, W, C).
      auto out = torch::empty({n, v4.numel()}, opts);
      comm->allgather(v4 * (r + 1), out);
      EXPECT_TRUE(torch::equal(out[n - 1], (v4 * n).permute({0, 2, 3, 1}).reshape({-1}))) << what;

      auto m = torch::arange(12, opts).reshape({3, 4});
      std::string why;
      try {
        comm->allreduce(m.t(), tandem::ReduceOp::Sum);
      } catch (const std::invalid_argument& e) {
        why = e.what();
      }
      EXPECT_NE(why.find("is not dense in its memory format"), std::string::npos) << what << ": " << why;
      EXPECT_TRUE(torch::equal(m, torch::arange(12, opts).reshape({3, 4}))) << what << ": nothing was touched";
    }
  }
#endif
}

}  // namespace
