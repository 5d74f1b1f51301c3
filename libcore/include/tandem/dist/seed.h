#pragma once
// Seeds for many ranks: some randomness must differ per rank (dropout, data
// augmentation), some must agree everywhere (initial weights, sample order).
#include <cstdint>

namespace tandem {

class World;

// The seed every rank must share. A configured seed (>= 0) is used as is;
// a negative one means "pick one": rank 0 draws it and broadcasts it. A drawn
// seed is below 2^63, so that it can be given back as train.seed (to rerun,
// or to continue a run) and written where a seed is kept.
uint64_t shared_seed(World& world, int64_t configured);
// A distinct, reproducible stream per rank derived from the shared seed.
uint64_t rank_seed(uint64_t shared, int rank);

}  // namespace tandem
