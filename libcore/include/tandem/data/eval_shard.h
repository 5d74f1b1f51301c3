#pragma once
// Evaluation on every rank: each takes an equal share of [0, n), so no rank
// finishes early and waits alone at the next collective, and the padding that
// equal shares need is marked so it can be dropped before metrics.
#include <cstdint>
#include <vector>

#include "tandem/data/micro_batch.h"

namespace tandem {

// A rank's share: every slot it evaluates, in order.
struct EvalShard : MicroBatch {
  // Consecutive pieces of at most `size` slots (the last may be shorter). Every
  // rank of one eval_shard() call gets the same number of them.
  std::vector<MicroBatch> micro_batches(int64_t size) const;
};

// Rank r takes r, r + W, r + 2W, ...: ceil(n / W) slots on every rank, of which
// at most one is a duplicate (valid = 0). Gathering per-slot results from all
// ranks and interleaving them by rank restores the dataset's order.
EvalShard eval_shard(int64_t n, int world_size, int rank);

}  // namespace tandem
