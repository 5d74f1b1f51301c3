// The gradients' squared norm agrees however the same elements are cut
// (whole tensors, or ZeRO-2's blocks of a flat), and with a float64
// reference, to far below a float32 rounding: a float32 accumulation over
// 4M elements is off by about 7e-5 of itself.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "tandem/train/grad_norm.h"

namespace {

TEST(GradNorm, AnyCutOfTheSameElementsAgreesWithFloat64) {
  auto g = at::make_generator<at::CPUGeneratorImpl>(3);
  // An embedding-sized tensor, a small one, and a channels-last one whose
  // memory order differs from its logical order.
  const auto big = torch::randn({4'000'000}, g) * 1e-3;
  const auto small = torch::randn({769}, g);
  const auto conv = torch::randn({8, 3, 5, 5}, g).contiguous(at::MemoryFormat::ChannelsLast);
  const double reference = (big.to(torch::kDouble).square().sum() + small.to(torch::kDouble).square().sum() +
                            conv.to(torch::kDouble).square().sum())
                               .item<double>();

  const double whole = tandem::grad_sum_of_squares({big, small, conv}).item<double>();
  EXPECT_NEAR(whole, reference, 1e-12 * reference);

  // Two ranks' blocks of one flat holding all three, cut mid-tensor; their
  // squares sum to the whole's.
  const auto flat = torch::cat({big, small, conv.permute({0, 2, 3, 1}).reshape({-1})});
  const int64_t half = 2'000'123;
  const double blocks = tandem::grad_sum_of_squares({flat.narrow(0, 0, half)}).item<double>() +
                        tandem::grad_sum_of_squares({flat.narrow(0, half, flat.numel() - half)}).item<double>();
  EXPECT_NEAR(blocks, whole, 1e-12 * whole);
}

TEST(GradNorm, NonFiniteGradientsGiveANonFiniteSum) {
  auto t = torch::ones({3});
  t[1] = std::numeric_limits<float>::infinity();
  EXPECT_FALSE(std::isfinite(tandem::grad_sum_of_squares({torch::ones({2}), t}).item<double>()));
  t[1] = std::numeric_limits<float>::quiet_NaN();
  EXPECT_TRUE(std::isnan(tandem::grad_sum_of_squares({t}).item<double>()));
  EXPECT_EQ(tandem::grad_sum_of_squares({}).item<double>(), 0.0);
}

}  // namespace
