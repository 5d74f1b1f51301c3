#include <gtest/gtest.h>

#include "tandem/dist/placement.h"
#include "tandem/error.h"

using tandem::choose_placement;

namespace {

std::string error_of(int local_rank, int gpus, const std::string& dev, const std::string& be, bool nccl) {
  try {
    choose_placement(local_rank, gpus, dev, be, nccl);
  } catch (const tandem::UsageError& e) {
    return e.what();
  }
  return "";
}

TEST(Placement, CpuWhenNoGpuIsVisible) {
  auto p = choose_placement(1, 0, "auto", "auto", true);
  EXPECT_FALSE(p.cuda);
  EXPECT_EQ(p.backend, "mpi");
  EXPECT_EQ(p.torch_device(), "cpu");
}

TEST(Placement, LocalRankPicksTheGpuAndNcclWhenBuilt) {
  auto p = choose_placement(3, 2, "auto", "auto", true);
  EXPECT_TRUE(p.cuda);
  EXPECT_EQ(p.device_index, 1);
  EXPECT_EQ(p.backend, "nccl");
  EXPECT_EQ(p.torch_device(), "cuda:1");
  EXPECT_EQ(choose_placement(0, 2, "auto", "auto", false).backend, "mpi");
}

TEST(Placement, DeviceCpuForcesCpuEvenWithGpus) {
  auto p = choose_placement(0, 4, "cpu", "auto", true);
  EXPECT_FALSE(p.cuda);
  EXPECT_EQ(p.backend, "mpi");
}

TEST(Placement, ImpossibleRequestsSayWhatToChange) {
  EXPECT_NE(error_of(0, 0, "auto", "nccl", true).find("set dist.backend = \"mpi\""), std::string::npos);
  EXPECT_NE(error_of(0, 1, "auto", "nccl", false).find("no NCCL backend"), std::string::npos);
  EXPECT_NE(error_of(0, 0, "cuda", "auto", true).find("CUDA_VISIBLE_DEVICES"), std::string::npos);
  EXPECT_NE(error_of(0, 0, "gpu", "auto", true).find("dist.device"), std::string::npos);
  EXPECT_NE(error_of(0, 0, "auto", "gloo", true).find("dist.backend"), std::string::npos);
}

}  // namespace

namespace {

TEST(PlacementUnseenGpus, ADriverTooOldForTheRuntimeStopsTheRun) {
  // The driver (NVML) sees two GPUs, LibTorch none: a CUDA 13 torch on a
  // CUDA 12.4 driver.
  const std::string why = tandem::gpus_unseen(0, 2, nullptr, "12.4", "13.2");
  EXPECT_EQ(why,
            "the NVIDIA driver sees 2 GPU(s) but LibTorch sees none: its CUDA runtime is 13.2 and the driver "
            "supports CUDA up to 12.4. A driver older than the runtime cannot run it (PyPI's CUDA 13 torch needs an "
            "R580 driver or newer): update the driver, or use a torch built for the driver's CUDA (TANDEM_PYTHON), "
            "or set dist.device = \"cpu\" to train on the CPU on purpose");
  // Slurm's gres sets CUDA_VISIBLE_DEVICES to the job's GPUs: still unseen.
  EXPECT_NE(tandem::gpus_unseen(0, 2, "0,1", "12.4", "13.2").find("(CUDA_VISIBLE_DEVICES=0,1)"), std::string::npos);
}

TEST(PlacementUnseenGpus, GpusHiddenOnPurposeOrSeenByLibTorchAreFine) {
  EXPECT_EQ(tandem::gpus_unseen(2, 2, nullptr, "13.2", "13.2"), "");
  EXPECT_EQ(tandem::gpus_unseen(0, 0, nullptr, "none", "13.2"), "");  // no driver: a CPU machine
  EXPECT_EQ(tandem::gpus_unseen(0, 2, "", "12.4", "13.2"), "");
  EXPECT_EQ(tandem::gpus_unseen(0, 2, "-1", "12.4", "13.2"), "");
}

TEST(PlacementSharedGpu, NamesTheFirstTwoRanksOnOneGpu) {
  EXPECT_EQ(tandem::shared_gpu({"n1 GPU 0000:3b:00.0", "n1 GPU 0000:5e:00.0", "n1 GPU 0000:3b:00.0"}),
            "ranks 0 and 2 would share n1 GPU 0000:3b:00.0: NCCL needs one GPU per rank");
  EXPECT_EQ(tandem::shared_gpu({"n1 GPU 0000:3b:00.0", "n2 GPU 0000:3b:00.0"}), "");
}

}  // namespace
