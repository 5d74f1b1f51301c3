// Attention a row at a time for rows packed end to end (nn/packed_rows.h):
// where each row's tokens go, by hand, and the causal attention of packed
// rows against each row's alone.
#include "tandem/nn/packed_rows.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "tandem/nn/attention.h"

namespace {

// Sequence 0 packs rows A (3 tokens) and B (2) and one padding position;
// sequence 1 holds row C (4) and two padding positions.
at::Tensor two_sequences() { return torch::tensor({0, 0, 0, 1, 1, -1, 0, 0, 0, 0, -1, -1}).view({2, 6}); }

TEST(PackedRows, BucketsRowsLongestFirstAndScattersThemBack) {
  const tandem::nn::PackedRows rows = tandem::nn::packed_rows(two_sequences());
  // C (4) opens a bucket, A (3) is at least 3/4 of it and joins, padded with
  // the zero row (12 = B x T); B (2) opens the next.
  ASSERT_EQ(rows.buckets.size(), 2u);
  EXPECT_TRUE(torch::equal(rows.buckets[0], torch::tensor({6, 7, 8, 9, 0, 1, 2, 12}).view({2, 4})));
  EXPECT_TRUE(torch::equal(rows.buckets[1], torch::tensor({3, 4}).view({1, 2})));
  // Slots: bucket 0's eight, then bucket 1's two; padding takes slot 10.
  EXPECT_TRUE(torch::equal(rows.scatter, torch::tensor({4, 5, 6, 8, 9, 10, 0, 1, 2, 3, 10, 10}).view({2, 6})));
}

TEST(PackedRows, ToRowsAndBackKeepsRealPositionsAndZeroesPadding) {
  const tandem::nn::PackedRows rows = tandem::nn::packed_rows(two_sequences());
  const at::Tensor x = torch::arange(1, 25, torch::kFloat).view({2, 6, 2});
  const auto parts = tandem::nn::to_rows(x, rows);
  ASSERT_EQ(parts.size(), 2u);
  EXPECT_TRUE(torch::equal(parts[1], x[0].narrow(0, 3, 2).unsqueeze(0)));
  EXPECT_TRUE(torch::equal(parts[0][1][3], torch::zeros({2})));
  at::Tensor expected = x.clone();
  expected[0][5].zero_();
  expected[1].narrow(0, 4, 2).zero_();
  EXPECT_TRUE(torch::equal(tandem::nn::from_rows(parts, rows), expected));
}

TEST(PackedRows, CausalAttentionOfPackedRowsIsEachRowsAlone) {
  torch::manual_seed(0);
  const at::Tensor segments = two_sequences();
  const tandem::nn::PackedRows rows = tandem::nn::packed_rows(segments);
  const at::Tensor qkv = torch::randn({2, 6, 3 * 4});  // q, k, v of one head of 4
  const auto attend = [](const at::Tensor& part) {
    const auto split = part.unsqueeze(1).split(4, 3);  // [b, 1, t, 4] each
    return tandem::nn::attention(split[0], split[1], split[2]).squeeze(1);
  };
  std::vector<at::Tensor> ys;
  for (const at::Tensor& part : tandem::nn::to_rows(qkv, rows)) ys.push_back(attend(part));
  const at::Tensor packed = tandem::nn::from_rows(ys, rows);
  const auto alone = [&](int64_t b, int64_t start, int64_t length) {
    return attend(qkv[b].narrow(0, start, length).unsqueeze(0))[0];
  };
  EXPECT_TRUE(torch::allclose(packed[0].narrow(0, 0, 3), alone(0, 0, 3), 1e-6, 1e-6));
  EXPECT_TRUE(torch::allclose(packed[0].narrow(0, 3, 2), alone(0, 3, 2), 1e-6, 1e-6));
  EXPECT_TRUE(torch::allclose(packed[1].narrow(0, 0, 4), alone(1, 0, 4), 1e-6, 1e-6));
}

}  // namespace
