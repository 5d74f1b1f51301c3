// The collective contract of communicator.h, one set of cases for every
// backend: what NCCL accepts works on both (channels-last tensors, which
// carotid's convolution weights are), and what NCCL refuses stops on both,
// with the same message, before any rank enters a collective. Each case runs
// on "mpi" (CPU tensors) and on "nccl" (the rank's GPU), which skips, saying
// why, where there is no GPU per rank: ctest's mpi_contract runs the MPI
// cases on 2 ranks, mpi_contract_nccl the NCCL ones on 1 rank, and
// env/gpu-check.sh's contract-nccl requires them not to skip.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <chrono>
#include <iostream>
#include <memory>
#include <thread>

#include "tandem/dist/mpi_comm.h"
#include "tandem/dist/world.h"
#include "tandem/program.h"
#include "world_fixture.h"

#if TANDEM_HAVE_NCCL
#include "tandem/dist/nccl_comm.h"
#include "rank_sums.h"
#endif

using tandem::MpiComm;
using tandem::ReduceOp;

namespace {

using tandem::testing::triangle;

// Why `backend`'s cases cannot run here; "" when they can. The same answer
// on every rank, so all skip alike.
std::string why_not(const std::string& backend) {
  if (backend == "mpi") return "";
#if !TANDEM_HAVE_NCCL
  return "built without the CUDA toolkit and NCCL (TANDEM_CUDA)";
#else
  if (!torch::cuda::is_available())
    return "no GPU visible to LibTorch (CPU-only LibTorch, or CUDA_VISIBLE_DEVICES empty)";
  if (static_cast<int>(torch::cuda::device_count()) < test_world().size())
    return "NCCL needs a GPU per rank: run the nccl cases on 1 rank (ctest mpi_contract_nccl)";
  return "";
#endif
}

std::unique_ptr<tandem::Communicator> make_comm(const std::string& backend) {
  auto& world = test_world();
#if TANDEM_HAVE_NCCL
  if (backend == "nccl") return std::make_unique<tandem::NcclComm>(world, world.local_rank());
#endif
  return std::make_unique<MpiComm>(world);
}

#define SKIP_WITHOUT(backend)                                     \
  if (const std::string why = why_not(backend); !why.empty()) { \
    GTEST_SKIP() << why;                                          \
  }

// N, C, H, W = 2, 3, 4, 5 with every element distinct, channels-last in memory.
torch::Tensor channels_last(c10::ScalarType type, c10::Device device) {
  return torch::arange(120, torch::kFloat)
      .reshape({2, 3, 4, 5})
      .to(device, type)
      .contiguous(at::MemoryFormat::ChannelsLast);
}

// The message `op` throws, or "" when it does not.
template <class F>
std::string refusal(F&& op) {
  try {
    op();
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}

std::string backend_name(const ::testing::TestParamInfo<std::string>& info) { return info.param; }

class ContractChannelsLast : public ::testing::TestWithParam<std::tuple<std::string, c10::ScalarType>> {};

TEST_P(ContractChannelsLast, AllreduceAndBroadcastKeepValuesAndLayout) {
  const auto& [backend, type] = GetParam();
  SKIP_WITHOUT(backend);
  auto& world = test_world();
  auto comm = make_comm(backend);
  const auto device = comm->device();
  auto t = channels_last(type, device) * (world.rank() + 1);
  ASSERT_FALSE(t.is_contiguous());
  const void* where = t.data_ptr();
  comm->allreduce(t, ReduceOp::Sum);
  EXPECT_TRUE(torch::equal(t, channels_last(type, device) * triangle(world.size())));
  EXPECT_TRUE(t.is_contiguous(at::MemoryFormat::ChannelsLast));
  EXPECT_EQ(t.data_ptr(), where) << "reduced in place";

  const int root = world.size() - 1;
  auto b = channels_last(type, device) * (world.rank() + 1);
  comm->broadcast(b, root);
  EXPECT_TRUE(torch::equal(b, channels_last(type, device) * (root + 1)));
  EXPECT_TRUE(b.is_contiguous(at::MemoryFormat::ChannelsLast));
}

INSTANTIATE_TEST_SUITE_P(Backends, ContractChannelsLast,
                         ::testing::Combine(::testing::Values("mpi", "nccl"),
                                            ::testing::Values(torch::kFloat32, torch::kFloat16)),
                         [](const auto& info) {
                           return std::get<0>(info.param) + "_" + c10::toString(std::get<1>(info.param));
                         });

class ContractRefusals : public ::testing::TestWithParam<std::string> {};

TEST_P(ContractRefusals, AStridedViewIsRefusedAsNcclRefusesIt) {
  SKIP_WITHOUT(GetParam());
  auto comm = make_comm(GetParam());
  auto m = torch::arange(12, torch::kFloat).reshape({3, 4}).to(comm->device());
  const std::string why = refusal([&] { comm->allreduce(m.t(), ReduceOp::Sum); });
  EXPECT_EQ(why,
            "allreduce: f32[4, 3] with strides [1, 4] is not dense in its memory format (contiguous, or "
            "channels-last for 4-D and 5-D): a collective moves one block of memory, so pass .contiguous() and "
            "copy the result back");
  EXPECT_NE(refusal([&] { comm->broadcast(m.narrow(1, 0, 2), 0); }), "");
  EXPECT_TRUE(torch::equal(m.cpu(), torch::arange(12, torch::kFloat).reshape({3, 4}))) << "nothing was touched";
}

TEST_P(ContractRefusals, ATensorOnAnotherDeviceOrOfAnotherTypeIsRefused) {
  SKIP_WITHOUT(GetParam());
  auto& world = test_world();
  // A communicator on cuda:0 (NCCL's, or a GPU rank's on the MPI backend)
  // takes that GPU's tensors, not the host's.
  std::unique_ptr<tandem::Communicator> on_gpu =
      GetParam() == "nccl" ? make_comm("nccl") : std::make_unique<MpiComm>(world, c10::Device("cuda:0"));
  EXPECT_EQ(refusal([&] { on_gpu->allreduce(torch::ones({4}), ReduceOp::Sum); }),
            "allreduce: f32[4] with strides [1] is on cpu, but this communicator works on " +
                on_gpu->device().str());
  auto comm = make_comm(GetParam());
  EXPECT_NE(refusal([&] { comm->allreduce(torch::ones({4}, comm->device()).to(torch::kBool), ReduceOp::Max); })
                .find("has a type collectives do not take"),
            std::string::npos);
}

TEST_P(ContractRefusals, AllgatherOutputMustFitAndNotOverlapTheInput) {
  SKIP_WITHOUT(GetParam());
  auto& world = test_world();
  auto comm = make_comm(GetParam());
  const auto on = torch::TensorOptions().device(comm->device());
  auto out = torch::zeros({world.size() * 4}, on);
  EXPECT_NE(refusal([&] { comm->allgather(out.narrow(0, 0, 4), out); }).find("shares memory with the input"),
            std::string::npos);
  EXPECT_NE(refusal([&] { comm->allgather(torch::ones({4}, on), torch::zeros({world.size() * 4 + 1}, on)); })
                .find("must hold " + std::to_string(world.size()) + " (world size) x 4 elements"),
            std::string::npos);
  EXPECT_NE(refusal([&] { comm->allgather(torch::ones({4}, on), out.to(torch::kDouble)); }), "");
}

TEST_P(ContractRefusals, ReduceScatterInputMustHoldEveryRanksBlockAndNotOverlapTheOutput) {
  SKIP_WITHOUT(GetParam());
  auto& world = test_world();
  auto comm = make_comm(GetParam());
  const auto on = torch::TensorOptions().device(comm->device());
  auto whole = torch::ones({world.size() * 4}, on);
  EXPECT_NE(refusal([&] { comm->reduce_scatter(whole, whole.narrow(0, 0, 4), ReduceOp::Sum); })
                .find("reduce_scatter (output): f32[4] with strides [1] shares memory with the input"),
            std::string::npos);
  EXPECT_NE(
      refusal([&] { comm->reduce_scatter(torch::ones({world.size() * 4 + 1}, on), torch::zeros({4}, on), ReduceOp::Sum); })
          .find("reduce_scatter (input): f32[" + std::to_string(world.size() * 4 + 1) + "] with strides [1] must hold " +
                std::to_string(world.size()) + " (world size) x 4 elements of the output's type f32"),
      std::string::npos);
  EXPECT_NE(refusal([&] {
              comm->reduce_scatter(whole.t().contiguous().view({world.size(), 4}).t(), torch::zeros({4}, on),
                                   ReduceOp::Sum);
            }).find("reduce_scatter (input)"),
            std::string::npos);
}

INSTANTIATE_TEST_SUITE_P(Backends, ContractRefusals, ::testing::Values("mpi", "nccl"), backend_name);

// A communicator whose teardown behaves as NcclComm's: destroying waits for
// the peers (here a while, standing for "until they come"), aborting does not.
class FakeComm : public tandem::Communicator {
 public:
  ~FakeComm() override {
    const bool abort = tandem::teardown_for(failed) == tandem::Teardown::Abort;
    std::cerr << "teardown: " << (abort ? "abort" : "destroy") << std::endl;
    if (!abort) std::this_thread::sleep_for(std::chrono::seconds(2));
  }
  std::string backend() const override { return "fake"; }
  int rank() const override { return 0; }
  int size() const override { return 1; }
  c10::Device device() const override { return c10::Device(c10::kCPU); }
  tandem::WorkHandle allreduce_async(const at::Tensor&, ReduceOp) override { return nullptr; }
  tandem::WorkHandle broadcast_async(const at::Tensor&, int) override { return nullptr; }
  tandem::WorkHandle allgather_async(const at::Tensor&, const at::Tensor&) override { return nullptr; }
  tandem::WorkHandle reduce_scatter_async(const at::Tensor&, const at::Tensor&, ReduceOp) override { return nullptr; }
  tandem::WorkHandle barrier_async() override { return nullptr; }
  bool failed = false;
};

// What a Trainer is to its communicator: it owns it, and reports an error
// before rethrowing it.
struct Owner {
  FakeComm comm;
  void run() {
    try {
      throw std::runtime_error("CUDA out of memory. Tried to allocate 2.00 GiB");
    } catch (const std::exception& e) {
      tandem::report_error(test_world(), e);
      throw;
    }
  }
};

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

#undef SKIP_WITHOUT

TEST(ContractTeardown, TheErrorComesOutBeforeATeardownThatDoesNotWait) {
  testing::internal::CaptureStderr();
  const auto t0 = std::chrono::steady_clock::now();
  try {
    Owner owner;
    owner.run();
  } catch (const std::runtime_error&) {
  }
  const double took = seconds_since(t0);
  const std::string err = testing::internal::GetCapturedStderr();
  const auto error_at = err.find("CUDA out of memory");
  const auto teardown_at = err.find("teardown: abort");
  ASSERT_NE(error_at, std::string::npos) << err;
  ASSERT_NE(teardown_at, std::string::npos) << err;
  EXPECT_LT(error_at, teardown_at) << err;
  EXPECT_LT(took, 1.0);
}

TEST(ContractTeardown, AFailedWorkAbortsAndAQuietEndDestroys) {
  testing::internal::CaptureStderr();
  {
    FakeComm comm;
    comm.failed = true;
  }
  { FakeComm comm; }
  EXPECT_EQ(testing::internal::GetCapturedStderr(), "teardown: abort\nteardown: destroy\n");
}

}  // namespace
