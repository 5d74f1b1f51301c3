#pragma once
// ZeRO's split of the parameters over the ranks (dist.shard, issue 44), and
// the collectives that bring the pieces together again.
//
// The trainable parameters are grouped as GradSync buckets them (reverse
// registration order, about dist.bucket_mb each). A group's tensors lie in a
// flat, each starting at a multiple of `align` elements, padded at the end to
// `world` blocks of one size, itself a multiple of `align`, so that
// reduce_scatter and allgather move equal blocks (communicator.h). Rank r
// owns block r and the runs of the tensors that fall in it: under
// "optimizer" (ZeRO-1) it updates those runs of the parameters and keeps
// AdamW's moments of them alone, then every rank gathers every block.
// DeepSpeed's stages 1-2 partition a flattened group alike (one padded flat,
// one equal partition per rank).
//
// Why the alignment: AdamW's fused CPU kernel walks a tensor in vectors and
// finishes its last few elements one by one, and the two paths round apart
// (exp_avg_sq differs by an ulp). A run that starts mid-tensor at a multiple
// of 64 elements from the tensor's start splits no vector that the whole
// tensor's update would have used, so a sharded update is the unsharded one
// to the bit.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "tandem/named_tensors.h"

namespace tandem {

class Communicator;

// Elements [offset, offset + length) of tensor `tensor`, in its memory order,
// sit at [at, at + length) of the rank's block.
struct ShardPiece {
  size_t tensor = 0;
  int64_t offset = 0;
  int64_t at = 0;
  int64_t length = 0;

  bool operator==(const ShardPiece&) const = default;
};

struct Shard {
  std::vector<int64_t> starts;     // each tensor's first element in the flat
  int64_t block = 0;               // elements per rank's block, a multiple of `align`
  int64_t padded = 0;              // block x world: the flat with its padding
  std::vector<ShardPiece> pieces;  // in the flat's order; none for a block of padding only
};

// Rank `rank`'s block of the flat of tensors with these element counts, in
// this order, each starting at a multiple of `align`. Throws
// std::invalid_argument for world < 1, a rank outside [0, world), align < 1
// or a negative count.
Shard shard_of(const std::vector<int64_t>& numels, int world, int rank, int64_t align = 1);

// GradSync's buckets and ZeRO's groups: indices into `params` of those that
// require grad, in reverse registration order (the order backward makes
// their gradients), a group ending once it holds bucket_mb MiB or where the
// dtype or device changes.
std::vector<std::vector<size_t>> group_params(const NamedTensors& params, double bucket_mb);

// A dense tensor's elements in memory order, as one 1-D view.
at::Tensor memory_order(const at::Tensor& dense);

// A run of a tensor's elements in memory order, and where it lies in the
// rank's block of its group.
struct ElementRun {
  int64_t offset = 0;
  int64_t length = 0;
  size_t group = 0;
  int64_t at = 0;
};

// One group: its parameters (indices into the ParamShards' parameters) in
// the flat's order, and this rank's block of it.
struct ShardGroup {
  std::vector<size_t> params;
  Shard shard;
  // Where each of this rank's pieces starts in its parameter's owned runs
  // laid end to end.
  std::vector<int64_t> local_at;
};

// The trainable parameters' split over the communicator's ranks, and the
// collectives over it. Every rank builds it from the same parameters.
class ParamShards {
 public:
  static constexpr int64_t kAlign = 64;

  // With `gradients` (dist.shard = "gradients", ZeRO-2) it also holds the
  // rank's block of every group's gradient, which GradSync reduce-scatters
  // into (or take_gradients fills) and AdamW reads instead of the
  // parameters' .grad. The blocks are fp32 whatever the parameters' dtype:
  // half-precision working weights (train.master_weights = "sharded") have
  // their gradients reduced, accumulated, clipped and applied in their fp32
  // masters' precision, as DeepSpeed's fp32 gradient partitions. `align`, a
  // multiple of kAlign: 8-bit moments (train/blockwise8.h) ask for their
  // block, so that every run starts at a block of its tensor.
  ParamShards(Communicator& comm, const NamedTensors& params, double bucket_mb, bool gradients = false,
              int64_t align = kAlign);

  // This rank's runs of parameter i (in `params`' order), in memory order:
  // what it updates; empty for a parameter wholly elsewhere.
  const std::vector<ElementRun>& owned(size_t param) const { return owned_.at(param); }
  // Elements this rank owns, over every parameter.
  int64_t owned_elements() const;
  // Every tensor and every rank's block starts at a multiple of it.
  int64_t align() const { return align_; }
  const std::vector<ShardGroup>& groups() const { return groups_; }

  // ZeRO-2's gradient blocks, one per group (padding and the gaps between
  // tensors hold zeros); none without `gradients`.
  bool holds_gradients() const { return !gradients_.empty(); }
  const std::vector<at::Tensor>& gradients() const { return gradients_; }
  // Parameter i's gradient over `run`, one of owned(i).
  at::Tensor gradient(const ElementRun& run) const { return gradients_.at(run.group).narrow(0, run.at, run.length); }
  // Gradients left whole in .grad (one rank; dist.shard = "optimizer", whose
  // all-reduce leaves them so) into the blocks: this rank's runs of each
  // parameter's .grad are added to them, and every .grad is dropped. One
  // rank calls it after each micro-step, so that accumulation adds in fp32
  // whatever the parameters' dtype.
  void take_gradients() const;

  // After each rank has updated its runs: every rank's runs into every rank's
  // parameters, group by group with one gather in flight behind the one being
  // copied out, so that two groups' flats are the most it holds at once.
  // Moves the parameters' version counters, as any in-place change does.
  // Nothing to do on one rank (sharded masters there).
  void all_gather() const;

  // Whole tensors from each rank's runs: `local[i]` holds this rank's runs of
  // parameter i end to end (as owned(i) lists them), or is undefined on
  // every rank for a parameter not wanted; the wanted ones of a group share
  // a dtype. Returned on rank 0 in host memory, shaped and laid out as the
  // parameters (undefined where not wanted); the other ranks get an empty
  // vector. A collective, group by group: one group's flat is the device
  // memory it needs beyond what it returns.
  std::vector<at::Tensor> gather(const std::vector<at::Tensor>& local) const;
  // The same for values kept one per `block` elements of each run (8-bit
  // moments' scales: quant_blocks of each run, end to end), with `block` a
  // divisor of the alignment: returned 1-D, one per block of the parameter.
  std::vector<at::Tensor> gather_blocks(const std::vector<at::Tensor>& local, int64_t block) const;

 private:
  // This rank's block of `group`: its pieces of the parameters, or (given
  // `local`, one per parameter) of the local runs, each element standing
  // for `per` of the parameter's (gather_blocks). Undefined when `local`
  // wants none of the group.
  at::Tensor block_of(const ShardGroup& group, const std::vector<at::Tensor>* local, int64_t per = 1) const;
  std::vector<at::Tensor> gather_per(const std::vector<at::Tensor>& local, int64_t per) const;

  Communicator& comm_;
  int64_t align_;
  NamedTensors params_;
  std::vector<ShardGroup> groups_;
  std::vector<std::vector<ElementRun>> owned_;
  std::vector<at::Tensor> gradients_;
};

}  // namespace tandem
