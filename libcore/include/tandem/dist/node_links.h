#pragma once
// MPI's allreduce over the two kinds of link a multi-node job has: among the
// ranks of one node (shared memory) and among one rank per node (the
// network). apps/envcheck times both, so a slow network shows apart from the
// fast path inside a node. Host memory through MPI, whatever the backend.
#include <cstdint>
#include <memory>

#include "tandem/dist/world.h"

namespace tandem {

class NodeLinks {
 public:
  // Splits the world by node and gathers the nodes' first ranks (collective).
  explicit NodeLinks(World& world);
  ~NodeLinks();
  NodeLinks(const NodeLinks&) = delete;
  NodeLinks& operator=(const NodeLinks&) = delete;

  enum class Link { within_node, between_nodes };
  // Whether this rank takes part in `link`: every rank is within its node;
  // between nodes, each node's local rank 0.
  bool member(Link link) const;
  // Ranks on the link as this rank sees it: its node's ranks, or the nodes.
  int size(Link link) const;
  // Microseconds of one allreduce(sum) of `count` floats, averaged over
  // `iters` after a warm-up, the slowest member's. Every member calls it.
  double time_allreduce(Link link, int64_t count, int64_t iters);

 private:
  struct Impl;
  World& world_;
  std::unique_ptr<Impl> impl_;
};

}  // namespace tandem
