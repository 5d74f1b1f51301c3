#pragma once
// Bandwidth of each collective over message sizes, reported as nccl-tests
// does: algbw = bytes / time, busbw = algbw x the collective's traffic factor,
// comparable with the link's peak whatever the number of ranks.
#include <cstdint>

namespace tandem {
class World;
class Communicator;
struct Placement;
}  // namespace tandem

namespace envcheck {

void print_bandwidth(tandem::World& world, tandem::Communicator& comm, const tandem::Placement& placement,
                     int64_t max_mb, int64_t iters);

// On a job of several nodes, MPI's allreduce twice more: among the ranks of
// each node (shared memory) and among one rank per node (the network), so a
// slow link between nodes shows apart from the fast path inside them. Host
// memory through MPI: what GPUs get from NCCL is print_bandwidth's table.
void print_node_bandwidth(tandem::World& world, int64_t max_mb, int64_t iters);

}  // namespace envcheck
