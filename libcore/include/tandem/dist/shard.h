#pragma once
// ZeRO's split of a flat run of tensors into one block per rank (issue 44).
// The tensors' elements lie end to end (a gradient bucket, or every
// parameter), padded at the end to `world` blocks of one size, a multiple of
// `align` elements, so that reduce_scatter and allgather move equal blocks
// (communicator.h). Rank r owns block r and the pieces of the tensors that
// fall in it: the slices of the gradients it keeps under "gradients", and of
// the parameters and AdamW moments it updates under "optimizer". DeepSpeed's
// stage 1-2 partitions a flattened group alike (one padded flat, one equal
// partition per rank).
#include <cstddef>
#include <cstdint>
#include <vector>

namespace tandem {

// Elements [offset, offset + length) of tensor `tensor` sit at [at, at +
// length) of the rank's block.
struct ShardPiece {
  size_t tensor = 0;
  int64_t offset = 0;
  int64_t at = 0;
  int64_t length = 0;

  bool operator==(const ShardPiece&) const = default;
};

struct Shard {
  int64_t block = 0;   // elements per rank's block: the flat's share, rounded up to `align`
  int64_t padded = 0;  // block x world: the flat with its padding
  std::vector<ShardPiece> pieces;  // in the flat's order; none for a block of padding only
};

// Rank `rank`'s block of the flat of tensors with these element counts, in
// this order. Throws std::invalid_argument for world < 1, a rank outside
// [0, world), align < 1 or a negative count.
Shard shard_of(const std::vector<int64_t>& numels, int world, int rank, int64_t align = 1);

}  // namespace tandem
