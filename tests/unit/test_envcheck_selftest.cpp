// envcheck --test's verdict on sums and averages: NCCL rounds each partial
// sum to the element type, and ncclAvg premultiplies each input by 1/n in it,
// so healthy hardware gives f16/bf16 averages a rounding away from exact for
// n = 3, 5, 6, 12, and sums from 9 ranks in bf16 and 24 in f16; maxima and
// integers must still be exact.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "selftest.h"

namespace {

using tandem::ReduceOp;

// What ncclAvg computes, rounded in `type` at every step: the sum of
// x_r * (1/n), added in ring order, which starts at another rank for each
// chunk of the buffer: here element i starts at rank i % n.
torch::Tensor nccl_style_average(int ranks, c10::ScalarType type) {
  const auto v = torch::arange(7 * ranks, torch::kLong) % 7 + 1;
  const auto inv = torch::full({}, 1.0 / ranks, torch::kDouble).to(type);
  auto sum = torch::zeros({7 * ranks}, type);
  for (int k = 0; k < ranks; ++k) {
    const auto rank = (torch::arange(7 * ranks, torch::kLong) + k) % ranks;
    sum = sum + (v * 2 * (rank + 1)).to(type) * inv;
  }
  return sum;
}

TEST(EnvcheckSelftest, AveragesAcceptNcclsRounding) {
  for (auto type : {torch::kHalf, torch::kBFloat16, torch::kFloat}) {
    for (int ranks : {2, 3, 5, 6, 12}) {
      SCOPED_TRACE(std::string(c10::toString(type)) + " on " + std::to_string(ranks) + " ranks");
      const auto v = torch::arange(7 * ranks, torch::kLong) % 7 + 1;
      const auto want = (v * (ranks + 1)).to(type);
      const auto got = nccl_style_average(ranks, type);
      if (ranks == 3 && type != torch::kFloat) {
        ASSERT_FALSE(torch::equal(got, want)) << "the rounding this test is about did not happen";
      }
      EXPECT_TRUE(envcheck::reduced_as_expected(got, want, ReduceOp::Avg, ranks));
      // A real fault (one element off by 20%: bf16 on 12 ranks may round by 5%)
      // is still caught.
      auto bad = got.clone();
      bad[5] = bad[5].to(torch::kDouble) * 1.2;
      EXPECT_FALSE(envcheck::reduced_as_expected(bad, want, ReduceOp::Avg, ranks));
    }
  }
}

// What NCCL's sum computes for the self-test's inputs ((r + 1) * v), rounded
// in `type` after every addition, in ring order from rank i % n for element i.
torch::Tensor nccl_style_sum(int ranks, c10::ScalarType type) {
  const auto v = torch::arange(7 * ranks, torch::kLong) % 7 + 1;
  auto sum = torch::zeros({7 * ranks}, type);
  for (int k = 0; k < ranks; ++k) {
    const auto rank = (torch::arange(7 * ranks, torch::kLong) + k) % ranks;
    sum = sum + (v * (rank + 1)).to(type);
  }
  return sum;
}

TEST(EnvcheckSelftest, SumsOnManyRanksAcceptNcclsRounding) {
  // Before, a healthy 2-node 8-GPU cluster failed bf16 sums on its 16 ranks.
  for (auto type : {torch::kHalf, torch::kBFloat16, torch::kFloat}) {
    for (int ranks : {2, 9, 16, 24, 64}) {
      SCOPED_TRACE(std::string(c10::toString(type)) + " on " + std::to_string(ranks) + " ranks");
      const auto v = torch::arange(7 * ranks, torch::kLong) % 7 + 1;
      const auto want = (v * (ranks * (ranks + 1) / 2)).to(type);
      const auto got = nccl_style_sum(ranks, type);
      if ((type == torch::kBFloat16 && ranks >= 9) || (type == torch::kHalf && ranks >= 24)) {
        ASSERT_FALSE(torch::equal(got, want)) << "the rounding this test is about did not happen";
      }
      EXPECT_TRUE(envcheck::reduced_as_expected(got, want, ReduceOp::Sum, ranks));
      // A real fault is still caught: one element off by half (bf16 on 64
      // ranks may round by up to a quarter).
      auto bad = got.clone();
      bad[5] = bad[5].to(torch::kDouble) * 1.5;
      EXPECT_FALSE(envcheck::reduced_as_expected(bad, want, ReduceOp::Sum, ranks));
    }
  }
}

TEST(EnvcheckSelftest, MaximaAndIntegersStayExact) {
  const auto want = torch::tensor({6.0, 12.0}).to(torch::kHalf);
  const auto off = torch::tensor({6.0, 12.0078125}).to(torch::kHalf);  // one f16 unit at 12
  EXPECT_TRUE(envcheck::reduced_as_expected(want.clone(), want, ReduceOp::Max, 3));
  EXPECT_FALSE(envcheck::reduced_as_expected(off, want, ReduceOp::Max, 3));
  const auto ints = torch::tensor({4, 8}, torch::kLong);
  EXPECT_FALSE(envcheck::reduced_as_expected(ints + 1, ints, ReduceOp::Avg, 3));
  EXPECT_FALSE(envcheck::reduced_as_expected(ints + 1, ints, ReduceOp::Sum, 3));
}

}  // namespace
