#pragma once
// The inverse of eval_shard across ranks: per-sample results that every rank
// computed for its share, put back together in dataset order on every rank.
#include <ATen/core/Tensor.h>

#include <cstdint>

namespace tandem {

class World;

// `mine` holds one row per slot of this rank's eval_shard(n, ...) share,
// padding included: [slots, ...] on the CPU, with the same trailing shape and
// dtype on every rank. Returns the rows of all ranks in dataset order with the
// padding dropped, [n, ...], the same on every rank. A collective: every rank
// calls it, with the same n.
at::Tensor gather_in_order(World& world, int64_t n, const at::Tensor& mine);

}  // namespace tandem
