#include <gtest/gtest.h>
#include <torch/torch.h>

#include "model/linear.h"
#include "model/row_product.h"

namespace {

// x W^T + b in double, one output at a time.
at::Tensor reference(const at::Tensor& x, const at::Tensor& w, const at::Tensor& b) {
  const at::Tensor rows = x.to(torch::kDouble).reshape({-1, w.size(1)});
  at::Tensor out = torch::zeros({rows.size(0), w.size(0)}, torch::kDouble);
  for (int64_t r = 0; r < rows.size(0); ++r)
    for (int64_t o = 0; o < w.size(0); ++o)
      out[r][o] = rows[r].dot(w[o].to(torch::kDouble)).item<double>() + (b.defined() ? b[o].item<double>() : 0.0);
  std::vector<int64_t> shape = x.sizes().vec();
  shape.back() = w.size(0);
  return out.view(shape);
}

// Every row count the layouts switch at (1 row, 2..32, past 32), with and
// without bias, batched [B,T,C] as the models call it.
TEST(Linear, EqualsXWTransposedPlusBiasForEveryRowCount) {
  torch::manual_seed(0);
  const at::Tensor w = torch::randn({7, 5}), b = torch::randn({7});
  torch::NoGradGuard no_grad;
  for (const int64_t rows : {1, 2, 8, 32, 33, 40}) {
    const at::Tensor x = torch::randn({rows, 1, 5});
    for (const bool bias : {true, false}) {
      const at::Tensor y = summarize::linear(x, w, bias ? b : at::Tensor());
      ASSERT_EQ(y.sizes(), (std::vector<int64_t>{rows, 1, 7})) << rows;
      EXPECT_TRUE(torch::allclose(y.to(torch::kDouble), reference(x, w, bias ? b : at::Tensor()), 1e-5, 1e-5))
          << rows << " rows, bias " << bias;
    }
  }
}

// Two threads, whatever the machine has, and wide enough that each takes a
// slice of the columns; the weight requires grad, as a Linear's does, and
// comes transposed, as linear passes it.
TEST(RowProduct, EqualsTheRowTimesTheMatrixOnEveryThread) {
  const int threads = at::get_num_threads();
  at::set_num_threads(2);
  torch::manual_seed(2);
  const at::Tensor w = torch::randn({1000, 64}, torch::requires_grad()), b = torch::randn({1000});
  const at::Tensor x = torch::randn({1, 64});
  torch::NoGradGuard no_grad;
  const at::Tensor expected = reference(x, w.detach(), b);
  EXPECT_TRUE(torch::allclose(summarize::row_product(x, w.t(), b).to(torch::kDouble), expected, 1e-5, 1e-5));
  const at::Tensor m = w.detach().t().contiguous();
  EXPECT_TRUE(torch::allclose(summarize::row_product(x, m).to(torch::kDouble), reference(x, w.detach(), {}), 1e-5, 1e-5));
  at::set_num_threads(threads);
}

// Under autograd it is linear itself: gradients reach the weight and bias.
TEST(Linear, RecordsGradientsWhenTheyAreOn) {
  torch::manual_seed(1);
  const at::Tensor w = torch::randn({3, 4}, torch::requires_grad()), b = torch::randn({3}, torch::requires_grad());
  const at::Tensor x = torch::randn({4, 4});
  summarize::linear(x, w, b).sum().backward();
  EXPECT_TRUE(torch::allclose(w.grad(), x.sum(0).expand({3, 4})));
  EXPECT_TRUE(torch::allclose(b.grad(), torch::full({3}, 4.0)));
}

}  // namespace
