#include "tandem/dist/shard.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace tandem {

Shard shard_of(const std::vector<int64_t>& numels, int world, int rank, int64_t align) {
  if (world < 1 || rank < 0 || rank >= world || align < 1)
    throw std::invalid_argument("shard_of: world " + std::to_string(world) + ", rank " + std::to_string(rank) +
                                ", align " + std::to_string(align) + " (want world >= 1, 0 <= rank < world, align >= 1)");
  int64_t total = 0;
  for (int64_t n : numels) {
    if (n < 0) throw std::invalid_argument("shard_of: a tensor of " + std::to_string(n) + " elements");
    total += n;
  }
  const int64_t unit = align * world;
  Shard shard;
  shard.block = (total + unit - 1) / unit * align;
  shard.padded = shard.block * world;
  const int64_t first = shard.block * rank, end = first + shard.block;
  int64_t start = 0;  // of the current tensor in the flat
  for (size_t i = 0; i < numels.size(); start += numels[i], ++i) {
    const int64_t from = std::max(start, first), to = std::min(start + numels[i], end);
    if (from < to) shard.pieces.push_back({i, from - start, from - first, to - from});
  }
  return shard;
}

}  // namespace tandem
