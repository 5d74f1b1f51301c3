#include "tandem/dist/seed.h"

#include <random>

#include "tandem/dist/world.h"
#include "tandem/random.h"

namespace tandem {

uint64_t shared_seed(World& world, int64_t configured) {
  uint64_t seed = static_cast<uint64_t>(configured);
  if (configured < 0) {
    if (world.rank() == 0) seed = ((uint64_t{std::random_device{}()} << 32) | std::random_device{}()) & INT64_MAX;
    world.broadcast_bytes(&seed, sizeof seed, 0);
  }
  return seed;
}

uint64_t rank_seed(uint64_t shared, int rank) {
  // The rank-th splitmix64 draw from the shared seed: neighbouring seeds on
  // neighbouring ranks must not give overlapping streams, as seed + rank would.
  return mix64(shared + SplitMix64::kGolden * (static_cast<uint64_t>(rank) + 1));
}

}  // namespace tandem
