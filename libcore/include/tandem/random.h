#pragma once
// tandem's own randomness, for every draw outside LibTorch's generators
// (splits, sample orders, augmentation, per-sample seeds, the demo corpus),
// and its one stable hash (cache keys, per-name streams, weight fingerprints).
//
// Written out instead of taken from <random> because std::shuffle and the std
// distributions may differ between standard libraries: a split, an order or
// a crop must come out the same on a laptop, a cluster and a Kaggle notebook
// for one seed. Engines are: splitmix64 below, or std::mt19937_64, whose
// output the C++ standard fixes bit for bit (the sampler's, see sampler.cpp).
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tandem {

// splitmix64's output function (Steele, Lea and Flood 2014; Vigna's reference
// code): a bijection that scatters nearby inputs across all 64 bits.
inline uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// splitmix64: the state steps by the golden ratio and is mixed on the way
// out. One word of state, so every sample or person can own a stream; every
// seed, 0 included, gives a good one.
class SplitMix64 {
 public:
  static constexpr uint64_t kGolden = 0x9E3779B97F4A7C15ull;

  explicit SplitMix64(uint64_t seed) : state_(seed) {}

  uint64_t operator()() { return mix64(state_ += kGolden); }
  // Uniform in [0, 1) from the top 53 bits: every double the step allows.
  double uniform() { return static_cast<double>((*this)() >> 11) * 0x1.0p-53; }
  double uniform(double lo, double hi) { return lo + (hi - lo) * uniform(); }

 private:
  uint64_t state_;
};

// Uniform in [0, n) for n > 0, without modulo bias: the draws in the
// incomplete last block of 2^64 are drawn again (for small n, almost never,
// so the result is then x % n). Any engine returning 64 random bits.
template <class Engine>
uint64_t below(Engine& engine, uint64_t n) {
  const uint64_t limit = UINT64_MAX - UINT64_MAX % n;  // a multiple of n
  uint64_t x;
  do x = engine();
  while (x >= limit);
  return x % n;
}

// Fisher-Yates from the back (Knuth's Algorithm P): every order equally likely.
template <class T, class Engine>
void shuffle(std::vector<T>& items, Engine& engine) {
  for (size_t i = items.size(); i > 1; --i) std::swap(items[i - 1], items[below(engine, i)]);
}

// Two values into one seed (a run's seed and a label, a sample index, an
// epoch): nearby seeds and salts give unrelated streams.
inline uint64_t mix_seed(uint64_t seed, uint64_t salt) { return SplitMix64(seed ^ SplitMix64(salt)())(); }

// Beta(a, a) for a > 0, from `rng`: mixup's share of each image (Zhang et
// al. 2018). Written out, like the rest of this file, so that a run's draws
// do not depend on the standard library; see random.cpp for the method.
// Throws std::invalid_argument for a <= 0.
double symmetric_beta(SplitMix64& rng, double a);

// FNV-1a, 64 bit: a hash of bytes that is the same on every platform and run
// (std::hash promises neither). Not for adversarial input.
class Fnv1a64 {
 public:
  Fnv1a64& add(const void* data, size_t size) {
    const auto* bytes = static_cast<const unsigned char*>(data);
    for (size_t i = 0; i < size; ++i) value_ = (value_ ^ bytes[i]) * 0x100000001B3ull;
    return *this;
  }
  Fnv1a64& add(std::string_view text) { return add(text.data(), text.size()); }
  uint64_t value() const { return value_; }
  // 16 lowercase hex digits, for file names and logs.
  std::string hex() const {
    char text[17];
    std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(value_));
    return text;
  }

 private:
  uint64_t value_ = 0xCBF29CE484222325ull;
};

inline uint64_t fnv1a64(std::string_view text) { return Fnv1a64().add(text).value(); }

}  // namespace tandem
