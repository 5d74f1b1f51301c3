// Activation recomputation (nn/recompute.h): the gradients and batch-norm
// statistics of a run with blocks recomputed in backward are bitwise those
// of a run that kept every activation, dropout included, and each parameter
// gets its gradient once.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <map>

#include "tandem/nn/recompute.h"
#include "tandem/nn/resnet.h"

namespace tandem::nn {
namespace {

struct Grads {
  std::vector<at::Tensor> params, inputs, buffers;
};

// Seeds, runs `forward` on fresh copies of `inputs` (which require grad),
// back-propagates the sum of its output and returns every gradient.
template <class Forward>
Grads run(torch::nn::Module& model, const std::vector<at::Tensor>& inputs, bool recompute, Forward&& forward) {
  model.zero_grad();
  torch::manual_seed(7);
  std::vector<at::Tensor> leaves;
  for (const auto& t : inputs) leaves.push_back(t.detach().clone().requires_grad_(true));
  {
    RecomputeScope scope(recompute);
    forward(leaves).sum().backward();
  }
  Grads g;
  for (const auto& p : model.parameters()) g.params.push_back(p.grad().clone());
  for (const auto& t : leaves) g.inputs.push_back(t.grad().clone());
  for (const auto& b : model.buffers()) g.buffers.push_back(b.clone());
  return g;
}

void expect_bitwise(const std::vector<at::Tensor>& a, const std::vector<at::Tensor>& b, const char* what) {
  ASSERT_EQ(a.size(), b.size()) << what;
  for (size_t i = 0; i < a.size(); ++i) EXPECT_TRUE(torch::equal(a[i], b[i])) << what << " " << i;
}

TEST(Recompute, ResNetStagesGiveBitwiseTheSameGradientsAndStatistics) {
  ResNetOptions o;
  o.in_channels = 1;
  o.num_classes = 3;
  o.stem = "small";
  o.dropout = 0.3;
  // Two models with the same initial weights.
  torch::manual_seed(0);
  ResNet plain(o);
  torch::manual_seed(0);
  ResNet again(o);
  const at::Tensor x = torch::randn({4, 1, 16, 16});
  const auto forward = [](ResNet& net) {
    return [&net](const std::vector<at::Tensor>& in) { return net->forward(in[0]); };
  };
  const Grads kept = run(*plain, {x}, false, forward(plain));
  const Grads redone = run(*again, {x}, true, forward(again));
  expect_bitwise(kept.params, redone.params, "parameter gradient");
  expect_bitwise(kept.inputs, redone.inputs, "input gradient");
  // Updated once, by the first run, not again by the second.
  expect_bitwise(kept.buffers, redone.buffers, "batch-norm buffer");
}

// Two inputs, as the DiT's blocks take the tokens and the conditioning, and
// dropout, whose masks the second run must draw again.
struct TwoInputBlockImpl : torch::nn::Module {
  TwoInputBlockImpl()
      : fc(register_module("fc", torch::nn::Linear(6, 6))), drop(register_module("drop", torch::nn::Dropout(0.5))) {}
  at::Tensor forward(const at::Tensor& x, const at::Tensor& c) { return drop(torch::tanh(fc(x) * c)) + x; }
  torch::nn::Linear fc;
  torch::nn::Dropout drop;
};
TORCH_MODULE(TwoInputBlock);

TEST(Recompute, TwoInputsAndDropoutGiveBitwiseTheSameGradients) {
  torch::manual_seed(1);
  TwoInputBlock first;
  torch::manual_seed(1);
  TwoInputBlock second;
  const at::Tensor x = torch::randn({5, 6}), c = torch::randn({5, 6});
  // Two blocks in a row: the second's dropout draws after the first's.
  const auto forward = [](TwoInputBlock& block) {
    return [&block](const std::vector<at::Tensor>& in) {
      at::Tensor h = in[0];
      for (int i = 0; i < 2; ++i) {
        auto* b = block.get();
        h = recomputed(*b, [b](const at::Tensor& a, const at::Tensor& cond) { return b->forward(a, cond); }, h, in[1]);
      }
      return h;
    };
  };
  const Grads kept = run(*first, {x, c}, false, forward(first));
  const Grads redone = run(*second, {x, c}, true, forward(second));
  expect_bitwise(kept.params, redone.params, "parameter gradient");
  expect_bitwise(kept.inputs, redone.inputs, "input gradient");
  // The random stream goes on as without recomputation.
  const auto next_draw = [&](TwoInputBlock& block, bool recompute) {
    torch::manual_seed(3);
    RecomputeScope scope(recompute);
    forward(block)({x.clone().requires_grad_(true), c}).sum().backward();
    return torch::rand({3});
  };
  EXPECT_TRUE(torch::equal(next_draw(first, false), next_draw(second, true)))
      << "backward's second run moved the generator";
}

TEST(Recompute, EachParameterGetsItsGradientOnce) {
  TwoInputBlock block;
  std::map<std::string, int> calls;
  for (auto& p : block->named_parameters())
    p.value().register_hook([&calls, name = p.key()](const at::Tensor&) { ++calls[name]; });
  const at::Tensor x = torch::randn({5, 6}, torch::requires_grad()), c = torch::randn({5, 6});
  {
    RecomputeScope scope(true);
    auto* b = block.get();
    recomputed(*b, [b](const at::Tensor& a, const at::Tensor& cond) { return b->forward(a, cond); }, x, c)
        .sum()
        .backward();
  }
  EXPECT_EQ(calls, (std::map<std::string, int>{{"fc.bias", 1}, {"fc.weight", 1}}));
}

// As torch.utils.checkpoint's reentrant variant: the inner backward would
// write the block's parameters' .grad, which autograd::grad must not.
TEST(Recompute, AutogradGradThroughABlockIsRefused) {
  TwoInputBlock block;
  auto* b = block.get();
  const at::Tensor x = torch::randn({2, 6}, torch::requires_grad()), c = torch::ones({2, 6});
  RecomputeScope scope(true);
  const at::Tensor out =
      recomputed(*b, [b](const at::Tensor& a, const at::Tensor& cond) { return b->forward(a, cond); }, x, c).sum();
  try {
    torch::autograd::grad({out}, {x});
    FAIL() << "autograd::grad went through";
  } catch (const c10::Error& e) {
    EXPECT_NE(std::string(e.what()).find("use backward()"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(b->fc->weight.grad().defined());
}

TEST(Recompute, OffOutsideAScopeAndWithoutAutograd) {
  TwoInputBlock block;
  auto* b = block.get();
  const at::Tensor x = torch::randn({2, 6}, torch::requires_grad()), c = torch::ones({2, 6});
  const auto f = [b](const at::Tensor& a, const at::Tensor& cond) { return b->forward(a, cond); };
  EXPECT_EQ(recomputed(*b, f, x, c).grad_fn()->name().find("Recompute"), std::string::npos);
  RecomputeScope scope(true);
  EXPECT_NE(recomputed(*b, f, x, c).grad_fn()->name().find("Recompute"), std::string::npos);
  torch::NoGradGuard no_grad;
  EXPECT_FALSE(recomputed(*b, f, x, c).requires_grad());
}

}  // namespace
}  // namespace tandem::nn
