#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>
#include <vector>

#include "model/norm_mlp.h"

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

// The one-pass kernel against the formula in float64, values and both
// gradients: rows split over threads (256 rows of 24 on 2 threads), a few
// rows on one, and an input that is a transposed view.
TEST(NnRmsNorm, FusedCpuKernelMatchesTheFormulaForwardAndBackward) {
  torch::manual_seed(7);
  const int threads = at::get_num_threads();
  at::set_num_threads(2);
  for (const auto& shape : std::vector<std::vector<int64_t>>{{4, 64, 24}, {3, 40}, {24, 5, 6}}) {
    at::Tensor x = torch::randn(shape);
    if (shape.size() == 3 && shape[0] == 24) x = x.permute({1, 2, 0});  // [5, 6, 24], not contiguous
    const at::Tensor w0 = torch::randn({x.size(-1)});
    const at::Tensor g = torch::randn(x.sizes());

    const at::Tensor xf = x.clone().requires_grad_(), wf = w0.clone().requires_grad_();
    const at::Tensor yf = vavae::rms_norm_cpu(xf, wf, 1e-6);
    yf.backward(g);

    const at::Tensor xd = x.to(torch::kDouble).requires_grad_(), wd = w0.to(torch::kDouble).requires_grad_();
    const at::Tensor yd = xd * torch::rsqrt(xd.pow(2).mean(-1, true) + 1e-6) * wd;
    yd.backward(g.to(torch::kDouble));

    EXPECT_TRUE(torch::allclose(yf.to(torch::kDouble), yd, 1e-5, 1e-5)) << shape;
    EXPECT_TRUE(torch::allclose(xf.grad().to(torch::kDouble), xd.grad(), 1e-4, 1e-5)) << shape;
    EXPECT_TRUE(torch::allclose(wf.grad().to(torch::kDouble), wd.grad(), 1e-4, 1e-5)) << shape;
  }
  at::set_num_threads(threads);
}

// The module takes the kernel for float32 on the CPU and the formula for
// other types: both give the same numbers.
TEST(NnRmsNorm, ModuleGivesTheSameInFloatAndDouble) {
  RMSNorm norm(8);
  {
    torch::NoGradGuard no_grad;
    norm->weight.copy_(torch::linspace(-1, 2, 8));
  }
  const at::Tensor x = torch::randn({5, 8});
  const at::Tensor in_float = norm(x);
  norm->to(torch::kDouble);
  EXPECT_TRUE(torch::allclose(in_float.to(torch::kDouble), norm(x.to(torch::kDouble)), 1e-5, 1e-6));
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

// The one-pass gate against silu(a) * b in float64, value and gradient, on
// rows split over 2 threads and on a few rows.
TEST(NnSwiGLU, FusedCpuGateMatchesTheFormulaForwardAndBackward) {
  torch::manual_seed(11);
  const int threads = at::get_num_threads();
  at::set_num_threads(2);
  for (const auto& shape : std::vector<std::vector<int64_t>>{{4, 64, 2 * 10}, {3, 2 * 7}}) {
    const at::Tensor h = torch::randn(shape) * 3;
    const at::Tensor g = torch::randn(h.narrow(-1, 0, shape.back() / 2).sizes());
    const at::Tensor hf = h.clone().requires_grad_();
    const at::Tensor yf = vavae::swiglu_gate_cpu(hf);
    yf.backward(g);
    const at::Tensor hd = h.to(torch::kDouble).requires_grad_();
    const auto halves = hd.chunk(2, -1);
    const at::Tensor yd = torch::silu(halves[0]) * halves[1];
    yd.backward(g.to(torch::kDouble));
    EXPECT_TRUE(torch::allclose(yf.to(torch::kDouble), yd, 1e-5, 1e-5)) << shape;
    EXPECT_TRUE(torch::allclose(hf.grad().to(torch::kDouble), hd.grad(), 1e-5, 1e-5)) << shape;
  }
  at::set_num_threads(threads);
}

}  // namespace
