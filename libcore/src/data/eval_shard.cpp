#include "tandem/data/eval_shard.h"

#include <algorithm>
#include <stdexcept>

#include "tandem/obs/log.h"

namespace tandem {

std::vector<MicroBatch> EvalShard::micro_batches(int64_t size) const {
  if (size <= 0) throw std::invalid_argument(log::cat("eval micro-batch size ", size));
  std::vector<MicroBatch> out;
  const int64_t n = static_cast<int64_t>(indices.size());
  for (int64_t begin = 0; begin < n; begin += size) {
    const int64_t end = std::min(n, begin + size);
    out.push_back({{indices.begin() + begin, indices.begin() + end}, {valid.begin() + begin, valid.begin() + end}});
  }
  return out;
}

EvalShard eval_shard(int64_t n, int world_size, int rank) {
  if (n < 0 || world_size <= 0 || rank < 0 || rank >= world_size)
    throw std::invalid_argument(log::cat("eval_shard: ", n, " samples, rank ", rank, " of ", world_size));
  const int64_t slots = (n + world_size - 1) / world_size;
  EvalShard shard;
  shard.indices.reserve(slots);
  shard.valid.reserve(slots);
  for (int64_t i = 0; i < slots; ++i) {
    const int64_t p = i * world_size + rank;
    shard.indices.push_back(p % n);
    shard.valid.push_back(p < n ? 1 : 0);
  }
  return shard;
}

}  // namespace tandem
