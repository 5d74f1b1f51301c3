#include <gtest/gtest.h>

#include <stdexcept>

#include "tandem/obs/mfu.h"

namespace {

using tandem::mfu;
using tandem::peak_flops;

TEST(Mfu, KnowsCommonGpusByTheirDriverNames) {
  EXPECT_DOUBLE_EQ(*peak_flops("NVIDIA H100 80GB HBM3", "bf16"), 989.4e12);
  EXPECT_DOUBLE_EQ(*peak_flops("NVIDIA H100 PCIe", "bf16"), 756.5e12);
  EXPECT_DOUBLE_EQ(*peak_flops("NVIDIA H200", "bf16"), 989.4e12);
  EXPECT_DOUBLE_EQ(*peak_flops("NVIDIA A100-SXM4-80GB", "bf16"), 312e12);
  EXPECT_DOUBLE_EQ(*peak_flops("NVIDIA A100-SXM4-80GB", "tf32"), 156e12);
  EXPECT_DOUBLE_EQ(*peak_flops("NVIDIA A100-SXM4-80GB", "fp32"), 19.5e12);
  EXPECT_DOUBLE_EQ(*peak_flops("Tesla T4", "fp16"), 65e12);
  EXPECT_DOUBLE_EQ(*peak_flops("Tesla T4", "fp32"), 8.1e12);
  EXPECT_DOUBLE_EQ(*peak_flops("Tesla V100-SXM2-16GB", "fp16"), 125e12);
  EXPECT_DOUBLE_EQ(*peak_flops("Tesla P100-PCIE-16GB", "fp16"), 18.7e12);
  EXPECT_DOUBLE_EQ(*peak_flops("NVIDIA GeForce RTX 4090", "bf16"), 165.2e12);
}

TEST(Mfu, MatchesWholeNamesNotPrefixes) {
  EXPECT_DOUBLE_EQ(*peak_flops("NVIDIA A10", "bf16"), 125e12);  // not the A100's
  EXPECT_DOUBLE_EQ(*peak_flops("NVIDIA A10G", "bf16"), 70e12);
  EXPECT_DOUBLE_EQ(*peak_flops("NVIDIA L40S", "bf16"), 362e12);  // not the L4's
  EXPECT_DOUBLE_EQ(*peak_flops("NVIDIA L4", "bf16"), 121e12);
  EXPECT_DOUBLE_EQ(*peak_flops("Tesla V100S-PCIE-32GB", "fp16"), 130e12);
  EXPECT_DOUBLE_EQ(*peak_flops("NVIDIA GH200 480GB", "bf16"), 989.4e12);
  EXPECT_FALSE(peak_flops("NVIDIA T400 4GB", "fp16"));  // a small Quadro, not a T4
  EXPECT_DOUBLE_EQ(*peak_flops("nvidia h100 80gb hbm3", "bf16"), 989.4e12);
}

TEST(Mfu, IsFractionOfPeak) {
  EXPECT_DOUBLE_EQ(*mfu(494.7e12, "NVIDIA H100 80GB HBM3", "bf16"), 0.5);
  EXPECT_DOUBLE_EQ(*mfu(31.2e12, "NVIDIA A100-SXM4-80GB", "fp16"), 0.1);
}

TEST(Mfu, IsUnknownOnCpuUnknownGpusAndPrecisionsWithoutAFastPath) {
  EXPECT_FALSE(mfu(1e12, "cpu", "fp32"));
  EXPECT_FALSE(mfu(1e12, "", "bf16"));
  EXPECT_FALSE(mfu(1e12, "Some Future GPU 9000", "bf16"));
  EXPECT_FALSE(mfu(1e12, "Tesla T4", "bf16"));  // Turing has no bf16 tensor cores
  EXPECT_FALSE(mfu(1e12, "Tesla V100-SXM2-16GB", "tf32"));
}

TEST(Mfu, AMigSliceComparesWithItsShareOfTheSms) {
  // Before, the name's "A100" gave the whole GPU's 312 TFLOP/s to a slice of
  // 42 of its 108 SMs.
  const std::string slice = "NVIDIA A100-SXM4-40GB MIG 3g.20gb";
  EXPECT_DOUBLE_EQ(*peak_flops(slice, "bf16", 42), 312e12 * 42 / 108);
  EXPECT_DOUBLE_EQ(*mfu(312e12 * 42 / 108 / 2, slice, "bf16", 42), 0.5);
  EXPECT_DOUBLE_EQ(*peak_flops("NVIDIA H100 80GB HBM3 MIG 1g.10gb", "bf16", 16), 989.4e12 * 16 / 132);
  // No SM count, no telling which share: no MFU rather than a wrong one.
  EXPECT_FALSE(peak_flops(slice, "bf16"));
  // A whole GPU is unaffected by its SM count.
  EXPECT_DOUBLE_EQ(*peak_flops("NVIDIA A100-SXM4-80GB", "bf16", 108), 312e12);
}

TEST(Mfu, RejectsAPrecisionItDoesNotKnow) { EXPECT_THROW(peak_flops("Tesla T4", "auto"), std::invalid_argument); }

}  // namespace
