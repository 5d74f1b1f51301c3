#pragma once
// Per-sample random streams. The loop hands make_batch one seed per epoch;
// mixing in the sample's index gives each sample its own stream, so its
// noise, timestep and label dropout are the same whichever rank and batch it
// lands in, and no loader thread touches LibTorch's global generator.
#include <ATen/CPUGeneratorImpl.h>

#include <cstdint>

#include "tandem/random.h"

namespace vavae {

inline at::Generator sample_generator(uint64_t seed, uint64_t index) {
  return at::detail::createCPUGenerator(tandem::mix_seed(seed, index));
}

}  // namespace vavae
