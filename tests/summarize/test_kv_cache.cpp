// The cache that makes generating a token one position's work: what it
// returns is everything appended so far, and it refuses to grow past capacity.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <stdexcept>

#include "model/kv_cache.h"

namespace {

using summarize::KVCache;

TEST(KVCache, AppendsAndReturnsEverythingSoFar) {
  torch::NoGradGuard no_grad;
  KVCache cache(2, 5);
  const at::Tensor k1 = torch::randn({2, 3, 3, 4}), v1 = torch::randn({2, 3, 3, 4});
  const at::Tensor k2 = torch::randn({2, 3, 1, 4}), v2 = torch::randn({2, 3, 1, 4});
  cache.append(0, k1, v1);
  EXPECT_EQ(cache.length(), 3);
  const auto [k, v] = cache.append(0, k2, v2);
  EXPECT_TRUE(torch::equal(k, torch::cat({k1, k2}, 2)));
  EXPECT_TRUE(torch::equal(v, torch::cat({v1, v2}, 2)));
  EXPECT_EQ(cache.length(), 4);
  EXPECT_THROW(cache.append(0, k1, v1), std::length_error);
  EXPECT_THROW(KVCache(0, 5), std::invalid_argument);
}

}  // namespace
