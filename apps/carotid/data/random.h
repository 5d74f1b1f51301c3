#pragma once
// The one random source carotid's data handling uses: splitmix64 and a
// Fisher-Yates shuffle on top of it. Written out here, not taken from <random>,
// because std::shuffle and the std distributions are free to differ between
// standard libraries: a split or an image subset must come out the same on a
// laptop, a cluster and a Kaggle notebook for the same seed.
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace carotid {

// splitmix64 (Steele, Lea and Flood 2014, as in Vigna's reference code): a
// 64-bit state stepped by a constant and mixed; every seed, 0 included, gives
// a good stream.
class SplitMix64 {
 public:
  explicit SplitMix64(uint64_t seed) : state_(seed) {}

  uint64_t next() {
    uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }

  // Uniform in [0, n) for n > 0, without modulo bias: draws that fall in the
  // incomplete last block of 2^64 are drawn again (rare for small n).
  uint64_t below(uint64_t n) {
    const uint64_t limit = UINT64_MAX - UINT64_MAX % n;  // a multiple of n
    uint64_t x;
    do x = next();
    while (x >= limit);
    return x % n;
  }

 private:
  uint64_t state_;
};

// Fisher-Yates from the back (Knuth's Algorithm P): every order equally likely.
template <class T>
void shuffle(std::vector<T>& items, SplitMix64& rng) {
  for (size_t i = items.size(); i > 1; --i) std::swap(items[i - 1], items[rng.below(i)]);
}

// A 64-bit FNV-1a hash of a name: gives each person its own stream from one
// seed, so one person's draw does not depend on which other persons exist.
inline uint64_t fnv1a64(const std::string& text) {
  uint64_t hash = 0xCBF29CE484222325ull;
  for (unsigned char c : text) hash = (hash ^ c) * 0x100000001B3ull;
  return hash;
}

// Two values mixed into one seed (e.g. the run's seed and a class label).
inline uint64_t mix_seed(uint64_t seed, uint64_t salt) {
  SplitMix64 rng(seed ^ SplitMix64(salt).next());
  return rng.next();
}

}  // namespace carotid
