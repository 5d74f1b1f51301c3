// tandem/random.h: the published reference values of splitmix64 and FNV-1a,
// bounded draws and shuffles that are fair and the same on every platform.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <numeric>
#include <random>
#include <set>
#include <stdexcept>
#include <vector>

#include "tandem/random.h"

namespace {

TEST(Random, SplitMix64GivesVignasReferenceStream) {
  // splitmix64.c by Sebastiano Vigna, seeded with 0.
  tandem::SplitMix64 rng(0);
  EXPECT_EQ(rng(), 0xE220A8397B1DCDAFull);
  EXPECT_EQ(rng(), 0x6E789E6AA1B965F4ull);
  EXPECT_EQ(rng(), 0x06C45D188009454Full);
  tandem::SplitMix64 other(1234567);
  EXPECT_EQ(other(), 6457827717110365317ull);
  EXPECT_EQ(other(), 3203168211198807973ull);
  EXPECT_EQ(other(), 9817491932198370423ull);
}

TEST(Random, Fnv1aGivesThePublishedTestVectors) {
  // From the FNV reference test suite (Fowler, Noll, Vo).
  EXPECT_EQ(tandem::fnv1a64(""), 0xCBF29CE484222325ull);
  EXPECT_EQ(tandem::fnv1a64("a"), 0xAF63DC4C8601EC8Cull);
  EXPECT_EQ(tandem::fnv1a64("foobar"), 0x85944171F73967E8ull);
  // Added piece by piece, the same as at once; hex for file names.
  tandem::Fnv1a64 h;
  h.add("foo").add("bar");
  EXPECT_EQ(h.value(), tandem::fnv1a64("foobar"));
  EXPECT_EQ(h.hex(), "85944171f73967e8");
}

TEST(Random, BelowStaysInRangeAndIsFair) {
  tandem::SplitMix64 rng(7);
  std::vector<int> counts(6, 0);
  for (int i = 0; i < 60000; ++i) ++counts[tandem::below(rng, 6)];
  for (int c : counts) EXPECT_NEAR(c, 10000, 400);  // about 4 standard deviations
  for (int i = 0; i < 100; ++i) EXPECT_EQ(tandem::below(rng, 1), 0u);
  // Near 2^64 the rejection matters: still in range.
  const uint64_t huge = (uint64_t{1} << 63) + 12345;
  for (int i = 0; i < 1000; ++i) EXPECT_LT(tandem::below(rng, huge), huge);
}

TEST(Random, UniformIsInTheHalfOpenInterval) {
  tandem::SplitMix64 rng(1);
  double lo = 1, hi = 0;
  for (int i = 0; i < 10000; ++i) {
    const double u = rng.uniform();
    ASSERT_GE(u, 0.0);
    ASSERT_LT(u, 1.0);
    lo = std::min(lo, u);
    hi = std::max(hi, u);
  }
  EXPECT_LT(lo, 0.001);
  EXPECT_GT(hi, 0.999);
  const double v = rng.uniform(-2.0, 3.0);
  EXPECT_GE(v, -2.0);
  EXPECT_LT(v, 3.0);
}

TEST(Random, ShuffleIsAPermutationAndEveryOrderIsReached) {
  std::vector<int> items(50);
  std::iota(items.begin(), items.end(), 0);
  tandem::SplitMix64 rng(3);
  auto shuffled = items;
  tandem::shuffle(shuffled, rng);
  EXPECT_NE(shuffled, items);
  auto sorted = shuffled;
  std::sort(sorted.begin(), sorted.end());
  EXPECT_EQ(sorted, items);

  // All 6 orders of 3 items, each about a sixth of the time.
  std::map<std::vector<int>, int> seen;
  for (int i = 0; i < 6000; ++i) {
    std::vector<int> three = {0, 1, 2};
    tandem::shuffle(three, rng);
    ++seen[three];
  }
  ASSERT_EQ(seen.size(), 6u);
  for (const auto& [order, count] : seen) EXPECT_NEAR(count, 1000, 130);
}

TEST(Random, SameSeedSameStreamWithEitherEngine) {
  // The sampler's engine is std::mt19937_64, whose stream the standard fixes:
  // its 10000th output from the default seed is given in [rand.predef].
  std::mt19937_64 mt;
  mt.discard(9999);
  EXPECT_EQ(mt(), 9981545732273789042ull);
  std::vector<int> a(20), b(20);
  std::iota(a.begin(), a.end(), 0);
  std::iota(b.begin(), b.end(), 0);
  std::mt19937_64 e1(42), e2(42);
  tandem::shuffle(a, e1);
  tandem::shuffle(b, e2);
  EXPECT_EQ(a, b);
}

TEST(Random, MixSeedSeparatesNearbySeedsAndSalts) {
  std::set<uint64_t> seeds;
  for (uint64_t seed = 0; seed < 32; ++seed)
    for (uint64_t salt = 0; salt < 32; ++salt) seeds.insert(tandem::mix_seed(seed, salt));
  EXPECT_EQ(seeds.size(), 32u * 32u);
  // Not symmetric: (seed, salt) and (salt, seed) are different streams.
  EXPECT_NE(tandem::mix_seed(1, 2), tandem::mix_seed(2, 1));
}

TEST(Random, SymmetricBetaHasBetasDistribution) {
  // P(x < 0.1), P(x < 0.3) of Beta(a, a): for a = 1 the uniform's; for a = 4,
  // I_x(4, 4) = sum_{j=4..7} C(7, j) x^j (1 - x)^(7 - j); for a = 0.2 by
  // Simpson's rule on the density (x = t^(1/a) removes its pole at 0).
  // The variance is 1 / (4 (2a + 1)). 200,000 draws: standard errors ~0.001.
  struct Case {
    double a, below_01, below_03;
  };
  for (const Case& c : {Case{0.2, 0.33669, 0.43320}, Case{1.0, 0.1, 0.3}, Case{4.0, 0.0027281, 0.126036}}) {
    tandem::SplitMix64 rng(11);
    const int n = 200000;
    double sum = 0, squares = 0, below_01 = 0, below_03 = 0;
    for (int i = 0; i < n; ++i) {
      const double x = tandem::symmetric_beta(rng, c.a);
      ASSERT_TRUE(x >= 0 && x <= 1) << x;
      sum += x;
      squares += x * x;
      below_01 += x < 0.1;
      below_03 += x < 0.3;
    }
    const double mean = sum / n;
    EXPECT_NEAR(mean, 0.5, 0.004) << "a = " << c.a;
    EXPECT_NEAR(squares / n - mean * mean, 1 / (4 * (2 * c.a + 1)), 0.004) << "a = " << c.a;
    EXPECT_NEAR(below_01 / n, c.below_01, 0.005) << "a = " << c.a;
    EXPECT_NEAR(below_03 / n, c.below_03, 0.005) << "a = " << c.a;
  }
}

TEST(Random, SymmetricBetaStaysInRangeForTinyA) {
  // Gamma(0.01) draws are mostly far below the smallest double: the share
  // must still come out in [0, 1], near 0 or 1, never NaN.
  tandem::SplitMix64 rng(3);
  int extreme = 0;
  for (int i = 0; i < 10000; ++i) {
    const double x = tandem::symmetric_beta(rng, 0.01);
    ASSERT_TRUE(x >= 0 && x <= 1) << x;
    extreme += x < 1e-3 || x > 1 - 1e-3;
  }
  EXPECT_GT(extreme, 9000);
  EXPECT_THROW(tandem::symmetric_beta(rng, 0), std::invalid_argument);
}

}  // namespace
