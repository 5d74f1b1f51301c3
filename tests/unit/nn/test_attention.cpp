#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>
#include <stdexcept>

#include "tandem/nn/attention.h"

namespace {

using tandem::nn::AttentionOptions;

// Attention written out one (batch, head, query) at a time, in double:
// query i of Tq is position Tk - Tq + i; it sees key j when j is not in its
// future (causal) and j is a real key, or else when j is itself.
at::Tensor reference(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, bool causal,
                     const at::Tensor& key_mask = {}) {
  const int64_t batch = q.size(0), heads = q.size(1), tq = q.size(2), tk = k.size(2), d = q.size(3);
  at::Tensor out = torch::zeros({batch, heads, tq, d}, torch::kDouble);
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t h = 0; h < heads; ++h) {
      for (int64_t i = 0; i < tq; ++i) {
        const int64_t pos = tk - tq + i;
        std::vector<double> w(tk, 0.0);
        double max = -INFINITY, sum = 0;
        for (int64_t j = 0; j < tk; ++j) {
          const bool real = !key_mask.defined() || key_mask[b][j].item<bool>();
          if ((causal && j > pos) || (!real && j != pos)) continue;
          w[j] = q[b][h][i].to(torch::kDouble).dot(k[b][h][j].to(torch::kDouble)).item<double>() / std::sqrt(double(d));
          max = std::max(max, w[j]);
        }
        at::Tensor acc = torch::zeros({d}, torch::kDouble);
        for (int64_t j = 0; j < tk; ++j) {
          const bool real = !key_mask.defined() || key_mask[b][j].item<bool>();
          if ((causal && j > pos) || (!real && j != pos)) continue;
          const double e = std::exp(w[j] - max);
          sum += e;
          acc += e * v[b][h][j].to(torch::kDouble);
        }
        out[b][h][i] = acc / sum;
      }
    }
  }
  return out.to(q.scalar_type());
}

struct Qkv {
  at::Tensor q, k, v;
};

Qkv random_qkv(int64_t batch, int64_t heads, int64_t tq, int64_t tk, int64_t d) {
  return {torch::randn({batch, heads, tq, d}), torch::randn({batch, heads, tk, d}),
          torch::randn({batch, heads, tk, d})};
}

void expect_close(const at::Tensor& actual, const at::Tensor& expected) {
  ASSERT_EQ(actual.sizes(), expected.sizes());
  EXPECT_TRUE(torch::allclose(actual, expected, 1e-5, 1e-5)) << (actual - expected).abs().max().item<double>();
}

AttentionOptions causal(bool on, const at::Tensor& key_mask = {}) {
  AttentionOptions options;
  options.causal = on;
  options.key_mask = key_mask;
  return options;
}

TEST(NnAttention, CausalEqualsTheReference) {
  torch::manual_seed(1);
  const Qkv x = random_qkv(2, 3, 5, 5, 8);
  expect_close(tandem::nn::attention(x.q, x.k, x.v), reference(x.q, x.k, x.v, true));
}

TEST(NnAttention, FullEqualsTheReference) {
  torch::manual_seed(2);
  const Qkv x = random_qkv(2, 3, 4, 6, 8);
  expect_close(tandem::nn::attention(x.q, x.k, x.v, causal(false)), reference(x.q, x.k, x.v, false));
}

TEST(NnAttention, FewerQueriesThanKeysAreTheLastPositions) {
  torch::manual_seed(3);
  const Qkv x = random_qkv(2, 2, 7, 7, 4);
  const at::Tensor full = tandem::nn::attention(x.q, x.k, x.v);
  const at::Tensor last3 = tandem::nn::attention(x.q.narrow(2, 4, 3), x.k, x.v);
  expect_close(last3, full.narrow(2, 4, 3));
  expect_close(last3, reference(x.q.narrow(2, 4, 3), x.k, x.v, true));
  expect_close(tandem::nn::attention(x.q.narrow(2, 6, 1), x.k, x.v), full.narrow(2, 6, 1));
  EXPECT_THROW(tandem::nn::attention(x.q, x.k.narrow(2, 0, 3), x.v.narrow(2, 0, 3)), std::invalid_argument);
}

TEST(NnAttention, FutureKeysDoNotChangeThePast) {
  torch::manual_seed(4);
  const Qkv x = random_qkv(1, 2, 6, 6, 4);
  at::Tensor k2 = x.k.clone(), v2 = x.v.clone();
  k2.narrow(2, 4, 2).normal_();
  v2.narrow(2, 4, 2).normal_();
  const at::Tensor before = tandem::nn::attention(x.q, x.k, x.v);
  const at::Tensor after = tandem::nn::attention(x.q, k2, v2);
  EXPECT_TRUE(torch::allclose(before.narrow(2, 0, 4), after.narrow(2, 0, 4), 0, 1e-6));
  EXPECT_FALSE(torch::allclose(before.narrow(2, 4, 2), after.narrow(2, 4, 2)));
}

TEST(NnAttention, PaddingKeysAreIgnoredAndPaddingQueriesStayFinite) {
  torch::manual_seed(5);
  // Row 0 is left-padded by 2, row 1 is not padded.
  const Qkv x = random_qkv(2, 2, 5, 5, 4);
  const at::Tensor key_mask = torch::tensor({0, 0, 1, 1, 1, 1, 1, 1, 1, 1}, torch::kBool).view({2, 5});
  const at::Tensor out = tandem::nn::attention(x.q, x.k, x.v, causal(true, key_mask));
  EXPECT_TRUE(torch::isfinite(out).all().item<bool>());
  expect_close(out, reference(x.q, x.k, x.v, true, key_mask));

  // Row 0's real positions, alone and unpadded, give the same outputs.
  const auto real = [](const at::Tensor& t) { return t.narrow(0, 0, 1).narrow(2, 2, 3); };
  expect_close(out.narrow(0, 0, 1).narrow(2, 2, 3), tandem::nn::attention(real(x.q), real(x.k), real(x.v)));
  expect_close(out.narrow(0, 1, 1),
               tandem::nn::attention(x.q.narrow(0, 1, 1), x.k.narrow(0, 1, 1), x.v.narrow(0, 1, 1)));

  // A new query after a padded prefix (the KV-cache step).
  const at::Tensor step = tandem::nn::attention(x.q.narrow(2, 4, 1), x.k, x.v, causal(true, key_mask));
  expect_close(step, out.narrow(2, 4, 1));

  const at::Tensor full = tandem::nn::attention(x.q, x.k, x.v, causal(false, key_mask));
  expect_close(full, reference(x.q, x.k, x.v, false, key_mask));
}

TEST(NnAttention, DropoutOnlyWhenTraining) {
  torch::manual_seed(6);
  const Qkv x = random_qkv(2, 2, 8, 8, 4);
  AttentionOptions options;
  options.dropout_p = 0.5;
  expect_close(tandem::nn::attention(x.q, x.k, x.v, options), tandem::nn::attention(x.q, x.k, x.v));
  options.training = true;
  EXPECT_FALSE(torch::allclose(tandem::nn::attention(x.q, x.k, x.v, options), tandem::nn::attention(x.q, x.k, x.v)));
}

}  // namespace
