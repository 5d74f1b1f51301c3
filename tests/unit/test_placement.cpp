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
