#include <gtest/gtest.h>
#include <torch/torch.h>

#include "model/linear.h"
#include "model/row_product.h"
#include "model/weight_copy.h"
#include "tandem/compat.h"

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

// The same with the weight packed by oneDNN, kept in a WeightCopy as the
// GPT-2 blocks keep theirs; the weight requires grad, as a Linear's does.
TEST(Linear, PackedEqualsXWTransposedPlusBiasForEveryRowCount) {
  torch::manual_seed(3);
  const at::Tensor w = torch::randn({70, 50}, torch::requires_grad()), b = torch::randn({70});
  torch::NoGradGuard no_grad;
  summarize::WeightCopy packed;
  for (const int64_t rows : {1, 2, 8, 32, 33}) {
    const at::Tensor x = torch::randn({1, rows, 50});
    for (const bool bias : {true, false}) {
      const at::Tensor y = summarize::linear(x, w, bias ? b : at::Tensor(), &packed);
      ASSERT_EQ(y.sizes(), (std::vector<int64_t>{1, rows, 70})) << rows;
      EXPECT_TRUE(torch::allclose(y.to(torch::kDouble), reference(x, w.detach(), bias ? b : at::Tensor()), 1e-5, 1e-5))
          << rows << " rows, bias " << bias;
    }
  }
}

// Generation during training: after an optimizer step (in place) or a load
// that swaps the tensor, the packed copy is made again, never used stale.
TEST(Linear, PackedCopyFollowsTheWeightWhenItChanges) {
  torch::manual_seed(4);
  at::Tensor w = torch::randn({40, 16}, torch::requires_grad());
  const at::Tensor x = torch::randn({8, 16});
  torch::NoGradGuard no_grad;
  summarize::WeightCopy packed;
  summarize::linear(x, w, {}, &packed);
  w.mul_(-2.0);
  EXPECT_TRUE(torch::allclose(summarize::linear(x, w, {}, &packed).to(torch::kDouble), reference(x, w, {}), 1e-5, 1e-5));
  w = torch::randn({40, 16});
  EXPECT_TRUE(torch::allclose(summarize::linear(x, w, {}, &packed).to(torch::kDouble), reference(x, w, {}), 1e-5, 1e-5));
}

// torch.backends.mkldnn.enabled = False keeps tandem off oneDNN as it keeps
// LibTorch: no packed copy, the same products.
TEST(Linear, NoPackingWhenOneDNNIsSwitchedOff) {
  at::globalContext().setUserEnabledMkldnn(false);
  const at::Tensor w = torch::randn({24, 16}), x = torch::randn({3, 16});
  torch::NoGradGuard no_grad;
  EXPECT_FALSE(tandem::compat::pack_linear_weight(w, 8).defined());
  summarize::WeightCopy packed;
  const at::Tensor y = summarize::linear(x, w, {}, &packed);
  at::globalContext().setUserEnabledMkldnn(true);
  EXPECT_TRUE(torch::allclose(y.to(torch::kDouble), reference(x, w, {}), 1e-5, 1e-5));
}

// The PyPI LibTorch users build with has oneDNN and its private packed-linear
// ops: if a release renames them, decoding falls back to a slower layout
// silently, so this says so instead.
TEST(Linear, ThisLibTorchPacksWeightsForOneDNN) {
  if (!at::hasMKLDNN()) GTEST_SKIP() << "this LibTorch was built without oneDNN";
  torch::NoGradGuard no_grad;
  const at::Tensor w = torch::randn({24, 16});
  const at::Tensor packed = tandem::compat::pack_linear_weight(w, 8);
  ASSERT_TRUE(packed.defined()) << "mkldnn::_reorder_linear_weight refused or missing in LibTorch " << TORCH_VERSION;
  const at::Tensor x = torch::randn({3, 16});
  EXPECT_TRUE(torch::allclose(tandem::compat::packed_linear(x, packed, {}), x.matmul(w.t()), 1e-5, 1e-5));
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

// Widths that are not multiples of the loops' steps (8 along a weight's row,
// 4 rows at a time), for both layouts and with and without a bias.
TEST(RowProduct, CoversWidthsOffTheVectorSteps) {
  torch::NoGradGuard no_grad;
  torch::manual_seed(3);
  for (const int64_t k : {1, 7, 77}) {
    for (const int64_t n : {1, 3, 517}) {
      const at::Tensor w = torch::randn({n, k}), b = torch::randn({n}), x = torch::randn({1, k});
      EXPECT_TRUE(torch::allclose(summarize::row_product(x, w.t(), b).to(torch::kDouble), reference(x, w, b), 1e-5,
                                  1e-5))
          << k << " x " << n;
      EXPECT_TRUE(torch::allclose(summarize::row_product(x, w.t().contiguous()).to(torch::kDouble),
                                  reference(x, w, {}), 1e-5, 1e-5))
          << k << " x " << n;
    }
  }
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
