#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>
#include <vector>

#include "model/rms_norm.h"
#include "model/swiglu.h"

namespace {

using vavae::RMSNorm;
using vavae::SwiGLU;

double silu(double x) { return x / (1 + std::exp(-x)); }

TEST(NnRmsNorm, DividesByRootMeanSquare) {
  RMSNorm norm(2);
  // mean(3^2, 4^2) = 12.5: each element is divided by sqrt(12.5 + eps).
  const at::Tensor out = norm(torch::tensor({{3.0f, 4.0f}}));
  const double rms = std::sqrt(12.5 + 1e-6);
  EXPECT_NEAR(out[0][0].item<double>(), 3 / rms, 1e-6);
  EXPECT_NEAR(out[0][1].item<double>(), 4 / rms, 1e-6);
}

TEST(NnRmsNorm, NormalisesEachRowOverTheLastDimensionThenScalesByWeight) {
  RMSNorm norm(2);
  {
    torch::NoGradGuard no_grad;
    norm->weight.copy_(torch::tensor({2.0f, -1.0f}));
  }
  // Each row is divided by its own rms (sqrt(12.5), then 1), not by one over the whole tensor.
  const at::Tensor out = norm(torch::tensor({{3.0f, 4.0f}, {1.0f, 1.0f}}));
  const double rms0 = std::sqrt(12.5 + 1e-6), rms1 = std::sqrt(1.0 + 1e-6);
  EXPECT_TRUE(
      torch::allclose(out, torch::tensor({{2 * 3 / rms0, -4 / rms0}, {2 / rms1, -1 / rms1}}).to(torch::kFloat)));
}

TEST(NnSwiGLU, MapsBackToTheInputWidthWithNamedLinears) {
  SwiGLU mlp(6, 10);
  EXPECT_EQ(mlp(torch::randn({2, 3, 6})).sizes(), (std::vector<int64_t>{2, 3, 6}));
  // Checkpoints and upstream weights load by these names.
  const auto params = mlp->named_parameters();
  EXPECT_EQ(params["w12.weight"].sizes(), (std::vector<int64_t>{20, 6}));
  EXPECT_EQ(params["w12.bias"].sizes(), (std::vector<int64_t>{20}));
  EXPECT_EQ(params["w3.weight"].sizes(), (std::vector<int64_t>{6, 10}));
  EXPECT_EQ(params["w3.bias"].sizes(), (std::vector<int64_t>{6}));
}

TEST(NnSwiGLU, GatesTheSecondHalfBySiluOfTheFirst) {
  SwiGLU mlp(2, 1);
  {
    torch::NoGradGuard no_grad;
    // w12: the first half (gate) is x0 + x1, the second half (value) is x0 - x1 + 0.5.
    mlp->w12->weight.copy_(torch::tensor({{1.0f, 1.0f}, {1.0f, -1.0f}}));
    mlp->w12->bias.copy_(torch::tensor({0.0f, 0.5f}));
    // w3: the one hidden unit h goes out as (2h, -h + 1).
    mlp->w3->weight.copy_(torch::tensor({{2.0f}, {-1.0f}}));
    mlp->w3->bias.copy_(torch::tensor({0.0f, 1.0f}));
  }
  // x = (1, 2): gate 3, value -0.5, h = silu(3) * -0.5.
  const at::Tensor out = mlp(torch::tensor({{1.0f, 2.0f}}));
  const double h = silu(3.0) * -0.5;
  EXPECT_NEAR(out[0][0].item<double>(), 2 * h, 1e-6);
  EXPECT_NEAR(out[0][1].item<double>(), -h + 1, 1e-6);
}

}  // namespace
