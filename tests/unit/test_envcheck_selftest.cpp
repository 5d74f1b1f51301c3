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

// The self-test's base vector for `ranks` ranks: v[i] = i % 7 + 1.
torch::Tensor base(int ranks) { return torch::arange(7 * ranks, torch::kLong) % 7 + 1; }

// What NCCL computes for the self-test's inputs, rounded in `type` at every
// step, added in ring order, which starts at another rank for each chunk of
// the buffer: here element i starts at rank i % n. Sum: rank r sends
// (r + 1) * v. Avg: rank r sends 2 (r + 1) * v, which ncclAvg multiplies by
// 1/n in the element type before adding.
torch::Tensor nccl_style(ReduceOp op, int ranks, c10::ScalarType type) {
  const bool avg = op == ReduceOp::Avg;
  const auto v = base(ranks);
  const auto inv = torch::full({}, 1.0 / ranks, torch::kDouble).to(type);
  auto sum = torch::zeros({7 * ranks}, type);
  for (int k = 0; k < ranks; ++k) {
    const auto rank = (torch::arange(7 * ranks, torch::kLong) + k) % ranks;
    const auto sent = (v * (avg ? 2 : 1) * (rank + 1)).to(type);
    sum = sum + (avg ? sent * inv : sent);
  }
  return sum;
}

TEST(EnvcheckSelftest, AveragesAcceptNcclsRounding) {
  for (auto type : {torch::kHalf, torch::kBFloat16, torch::kFloat}) {
    for (int ranks : {2, 3, 5, 6, 12}) {
      SCOPED_TRACE(std::string(c10::toString(type)) + " on " + std::to_string(ranks) + " ranks");
      const auto want = (base(ranks) * (ranks + 1)).to(type);
      const auto got = nccl_style(ReduceOp::Avg, ranks, type);
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

TEST(EnvcheckSelftest, SumsOnManyRanksAcceptNcclsRounding) {
  // Before, a healthy 2-node 8-GPU cluster failed bf16 sums on its 16 ranks.
  for (auto type : {torch::kHalf, torch::kBFloat16, torch::kFloat}) {
    for (int ranks : {2, 9, 16, 24, 64}) {
      SCOPED_TRACE(std::string(c10::toString(type)) + " on " + std::to_string(ranks) + " ranks");
      const auto want = (base(ranks) * (ranks * (ranks + 1) / 2)).to(type);
      const auto got = nccl_style(ReduceOp::Sum, ranks, type);
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
