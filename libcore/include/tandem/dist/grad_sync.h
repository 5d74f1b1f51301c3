#pragma once
// DDP done here: gradients are averaged over ranks while backward still runs.
//
// Parameters are grouped into buckets of about dist.bucket_mb, in reverse
// registration order, because backward produces gradients roughly from the
// last layer to the first: the first bucket fills first and can travel while
// earlier layers are still being differentiated. A hook on each parameter
// copies its gradient into the bucket; a full bucket is all-reduced at once,
// asynchronously. Buckets are launched strictly in index order, so every rank
// issues the same collectives in the same order even when a rank's autograd
// visits parameters differently. finish() launches what is left (parameters
// that got no gradient contribute zeros), waits, and writes the averages back.
//
// Sharded (dist.shard = "gradients", ZeRO-2): the buckets are ParamShards'
// groups, laid out as it lays them. A hook after autograd accumulates each
// gradient moves it into its bucket and drops .grad; a full bucket is
// reduce-scattered, and the rank's block of the average is added to its
// gradient block in ParamShards. A bucket's flat lives only from its first
// gradient until its reduction is drained: kBucketsInFlight travel at once
// (launching another drains the oldest), and gradients are moved into the
// next kBucketsFilling to launch alone; one for a bucket further on (a
// parameter used early, a rank's unused one) waits in .grad until its bucket
// is among them. So a rank holds its gradient blocks (1/N of the gradients)
// and a few buckets instead of the whole gradients twice over. Every
// micro-step syncs (DeepSpeed's stage 2 reduces each micro-step's gradients
// too), the blocks adding up the accumulation; finish() writes no .grad.
#include <cstdint>
#include <memory>
#include <vector>

#include "tandem/named_tensors.h"

namespace tandem {

class Communicator;
class ParamShards;

class GradSync {
 public:
  static constexpr int kBucketsInFlight = 2, kBucketsFilling = 2;

  // `params` in registration order; those not requiring grad are ignored.
  // overlap = false launches every bucket in finish(): the baseline that
  // benchmarks compare against. `shards` (holding gradients, built over the
  // same `params`, and outliving this) makes it sharded; bucket_mb is then
  // the shards'.
  GradSync(Communicator& comm, const NamedTensors& params, double bucket_mb, bool overlap = true,
           const ParamShards* shards = nullptr);
  ~GradSync();
  GradSync(const GradSync&) = delete;
  GradSync& operator=(const GradSync&) = delete;

  // Before each micro-step's backward, after its loss: gradients a loss takes
  // of its own (autograd::grad, for an adaptive weight) reach the hooks too,
  // and are let through untouched only while not syncing. Accumulation
  // micro-steps pass false: their gradients just accumulate locally, as with
  // DDP's no_sync().
  void prepare(bool sync);
  // After the backward of a syncing micro-step: every parameter's grad is then
  // the average over ranks of its locally accumulated gradient.
  void finish();
  // Instead of finish(), on a rank whose step will be dropped (it ran out of
  // memory): takes part in the step's reduction as the other ranks do,
  // whether or not this rank's syncing backward began (buckets already on
  // their way stay so), sending zeros for every gradient not yet in a
  // bucket; allocates nothing and leaves .grad alone. Sharded, it allocates
  // one bucket's flat and part at a time, and drops .grad.
  void abandon();

  int64_t num_buckets() const;
  std::vector<int64_t> bucket_sizes() const;  // elements per bucket
  // Milliseconds the last finish() waited for communication: the part of the
  // all-reduce that backward did not hide. On the host that is the time
  // finish() blocked; with NCCL, finish() only orders the compute stream after
  // the collectives, so it is the time the compute stream stalled, measured
  // with CUDA events (asking waits for that stall to have happened).
  double last_wait_ms() const;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

// Makes every rank start from rank 0's weights and buffers, as DDP does at
// construction: initialisation may have used different random streams.
void broadcast_from_rank0(Communicator& comm, const std::vector<at::Tensor>& tensors);

}  // namespace tandem
