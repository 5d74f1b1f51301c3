#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>
#include <tuple>
#include <vector>

#include "model/pos_embed.h"
#include "model/rope.h"

namespace {

// (a, b) turned by angle: (a cos - b sin, b cos + a sin).
std::vector<double> turn(double a, double b, double angle) {
  return {a * std::cos(angle) - b * std::sin(angle), b * std::cos(angle) + a * std::sin(angle)};
}

at::Tensor row(const std::vector<double>& values) { return torch::tensor(values).to(torch::kFloat); }

// head_dim 4: one frequency (1) per axis; dims 0-1 turn by the row, 2-3 by the column.
TEST(VavaeRope, HeadDim4OnA2x2Grid) {
  vavae::VisionRope rope(4, 2);
  const at::Tensor x = torch::tensor({1.0f, 2.0f, 3.0f, 4.0f}).repeat({4, 1});  // [T=4, D=4]
  const at::Tensor out = rope(x);
  for (int64_t n = 0; n < 4; ++n) {
    const double r = static_cast<double>(n / 2), c = static_cast<double>(n % 2);
    std::vector<double> expected = turn(1, 2, r);
    for (double value : turn(3, 4, c)) expected.push_back(value);
    EXPECT_TRUE(torch::allclose(out[n], row(expected), 1e-6, 1e-6)) << "token " << n << ": " << out[n];
  }
}

// head_dim 8: frequencies 1 and 10000^(-1/2) = 0.01 per axis. Token 7 of a 3x3
// grid is row 2, column 1.
TEST(VavaeRope, HeadDim8FrequenciesAndLayout) {
  vavae::VisionRope rope(8, 3);
  const at::Tensor values = torch::arange(1, 9, torch::kFloat);
  const at::Tensor x = values.repeat({2, 3, 9, 1});  // [B=2, heads=3, T=9, D=8]
  const at::Tensor out = rope(x);
  ASSERT_EQ(out.sizes(), x.sizes());
  std::vector<double> expected;
  for (const auto& [a, b, angle] : std::vector<std::tuple<double, double, double>>{
           {1, 2, 2 * 1.0}, {3, 4, 2 * 0.01}, {5, 6, 1 * 1.0}, {7, 8, 1 * 0.01}}) {
    for (double value : turn(a, b, angle)) expected.push_back(value);
  }
  EXPECT_TRUE(torch::allclose(out[1][2][7], row(expected), 1e-5, 1e-6)) << out[1][2][7];
  // Token 0 (row 0, column 0) is not turned.
  EXPECT_TRUE(torch::allclose(out[0][0][0], values));
}

// What RoPE is for: q.k after turning depends on the offset between the tokens only.
TEST(VavaeRope, DotProductDependsOnOffsetOnly) {
  torch::manual_seed(0);
  vavae::VisionRope rope(8, 4);
  const at::Tensor q = torch::randn({8}).repeat({16, 1}), k = torch::randn({8}).repeat({16, 1});
  const at::Tensor rq = rope(q), rk = rope(k);
  // (0,0)-(1,2) and (2,1)-(3,3): both one row and two columns apart.
  EXPECT_NEAR(rq[0].dot(rk[6]).item<double>(), rq[9].dot(rk[15]).item<double>(), 1e-4);
  EXPECT_EQ(rope(q.to(torch::kDouble)).scalar_type(), torch::kDouble);
}

// q and k reach the rotation as views of the attention's qkv projection
// ([N, T, 3, heads, D] permuted); the gradient is that of the formula in
// rope.h, written out over the same views.
TEST(VavaeRope, GradientOfViewsIsTheFormulas) {
  torch::manual_seed(1);
  vavae::VisionRope rope(8, 3);
  const at::Tensor qkv = torch::randn({2, 9, 3 * 2 * 8}, torch::requires_grad());
  const at::Tensor k = qkv.view({2, 9, 3, 2, 8}).permute({2, 0, 3, 1, 4})[1];
  const at::Tensor weights = torch::randn({2, 2, 9, 8});
  (rope(k) * weights).sum().backward();
  const at::Tensor ours = qkv.grad().clone();
  qkv.mutable_grad().zero_();
  const at::Tensor pairs = k.unflatten(-1, {4, 2});
  const at::Tensor swapped = torch::stack({-pairs.select(-1, 1), pairs.select(-1, 0)}, -1).flatten(-2);
  ((k * rope->freqs_cos + swapped * rope->freqs_sin) * weights).sum().backward();
  EXPECT_TRUE(torch::allclose(ours, qkv.grad(), 1e-5, 1e-6));
  EXPECT_GT(qkv.grad().abs().sum().item<double>(), 0);
}

// dim 8: each half has frequencies 1 and 10000^(-1/2) = 0.01, sines then
// cosines; the first half encodes the column, the second the row.
TEST(VavaePosEmbed, SinCosByHand) {
  const at::Tensor embed = vavae::sincos_pos_embed_2d(8, 2);
  ASSERT_EQ(embed.sizes(), (std::vector<int64_t>{4, 8}));
  const auto half = [](double p) {
    return std::vector<double>{std::sin(p), std::sin(0.01 * p), std::cos(p), std::cos(0.01 * p)};
  };
  for (int64_t n = 0; n < 4; ++n) {
    const double r = static_cast<double>(n / 2), c = static_cast<double>(n % 2);
    std::vector<double> expected = half(c);
    for (double value : half(r)) expected.push_back(value);
    EXPECT_TRUE(torch::allclose(embed[n], row(expected), 1e-6, 1e-7)) << "token " << n;
  }
}

}  // namespace
