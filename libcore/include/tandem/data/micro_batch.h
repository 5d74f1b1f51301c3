#pragma once
// The sample indices one rank feeds to one forward pass.
#include <cstdint>
#include <numeric>
#include <vector>

namespace tandem {

// Slots with valid[i] == 0 hold duplicates added so that every rank runs the
// same number of forward passes; they must not count towards losses or metrics.
struct MicroBatch {
  std::vector<int64_t> indices;
  std::vector<uint8_t> valid;
  // Packed (SamplerOptions::pack_tokens): the sequence, 0 .. count - 1,
  // that each sample is laid in, in order within it. Empty otherwise.
  std::vector<int64_t> sequence;
  int64_t num_valid() const { return std::accumulate(valid.begin(), valid.end(), int64_t{0}); }
};

}  // namespace tandem
