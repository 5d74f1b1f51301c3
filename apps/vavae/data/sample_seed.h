#pragma once
// Per-sample random streams. The loop hands make_batch one seed per epoch;
// mixing in the sample's index gives each sample its own stream, so its
// noise, timestep and label dropout are the same whichever rank and batch it
// lands in, and no loader thread touches LibTorch's global generator.
#include <ATen/CPUGeneratorImpl.h>

#include <cstdint>

namespace vavae {

// splitmix64's finaliser over seed and salt: nearby inputs give unrelated seeds.
inline uint64_t mix_seed(uint64_t seed, uint64_t salt) {
  uint64_t z = seed ^ (salt * 0x9E3779B97F4A7C15ull + 0x632BE59BD9B4E019ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

inline at::Generator sample_generator(uint64_t seed, uint64_t index) {
  return at::detail::createCPUGenerator(mix_seed(seed, index));
}

}  // namespace vavae
