#pragma once
// Every collective, every dtype, message sizes from one element to max_mb,
// checked against values known in advance on every rank.
#include <cstdint>

namespace tandem {
class World;
class Communicator;
struct Placement;
}  // namespace tandem

namespace envcheck {

// Returns the number of failed checks summed over all ranks (0: all passed).
int run_selftest(tandem::World& world, tandem::Communicator& comm,
                 const tandem::Placement& placement, int64_t max_mb);

}  // namespace envcheck
