#include "tandem/dist/seed.h"

#include <torch/torch.h>

#include <random>

#include "tandem/dist/world.h"

namespace tandem {

uint64_t shared_seed(World& world, int64_t configured) {
  uint64_t seed = static_cast<uint64_t>(configured);
  if (configured < 0) {
    if (world.rank() == 0) seed = (uint64_t{std::random_device{}()} << 32) | std::random_device{}();
    world.broadcast_bytes(&seed, sizeof seed, 0);
  }
  return seed;
}

uint64_t rank_seed(uint64_t shared, int rank) {
  // splitmix64 of (seed, rank): neighbouring seeds on neighbouring ranks must
  // not produce overlapping streams, which plain seed + rank would.
  uint64_t z = shared + 0x9E3779B97F4A7C15ull * (static_cast<uint64_t>(rank) + 1);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

void seed_torch(uint64_t seed) { torch::manual_seed(seed); }

}  // namespace tandem
