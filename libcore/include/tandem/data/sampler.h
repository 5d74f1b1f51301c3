#pragma once
// Which samples each rank trains on at each step, chosen so that the world
// size changes how the work is split but never what is learned from: the
// epoch's order depends only on (seed, epoch), and every global batch holds the
// same samples, cut into the same micro-batches, on any number of ranks
// (grouped by length or packed into sequences, the same samples per step:
// see SamplerOptions::lengths and pack_tokens; packed sequences may differ
// with the world size, the step's samples do not). A run can therefore resume from a cursor (epoch, step in epoch) on a different
// world size, provided the global batch stays the same.
#include <cstdint>
#include <memory>
#include <vector>

#include "tandem/data/micro_batch.h"
#include "tandem/config/key_names.h"

namespace tandem {

struct SamplerOptions {
  int64_t dataset_size = 0;
  int64_t micro_batch = 0;
  int64_t grad_accum = 1;
  int world_size = 1;
  int rank = 0;
  uint64_t seed = 0;
  bool shuffle = true;
  // Otherwise the last, partial global batch is filled up with samples from the
  // start of the epoch's order, marked invalid.
  bool drop_last = true;
  // Each sample's length (the dataset's size of them), or null. Given, every
  // global batch is sorted by it, longest first (padding slots last, ties in
  // drawn order), and micro-step a takes the a-th run of world_size x
  // micro_batch of that order, dealt to the ranks in turn (every other round
  // backwards): the same samples in the same steps as without, but each
  // micro-batch holds samples of about one length, so it pads little, and
  // every rank gets about the same tokens, so the ranks finish together. A
  // micro-step then holds the same samples on any world size with the same
  // world_size x micro_batch; which rank gets which depends on the world size.
  std::shared_ptr<const std::vector<int64_t>> lengths;
  // Packing (above 0, with `lengths`): each global batch of `global_batch`
  // samples (padding slots left out) is packed into sequences of at most
  // pack_tokens tokens (packing.h): first-fit decreasing says how many, and
  // the samples are then spread evenly over that many rounded up to a
  // multiple of world_size, so every rank gets as many sequences of about
  // the same work. micro_batch counts sequences, not samples. A sample
  // longer than pack_tokens is a caller's error (std::invalid_argument). Micro-step a runs sequences
  // a x world_size x micro_batch onwards, dealt to the ranks in turn as
  // grouped samples are, so a step takes micro_steps() = ceil(sequences /
  // (world_size x micro_batch)) micro-steps, the same on every rank, and
  // grad_accum is not used. A rank left without a sequence in the last
  // micro-step gets the step's shortest sample alone, marked invalid, so it
  // still runs the forward pass every rank's gradient sync waits for.
  int64_t pack_tokens = 0;
  int64_t global_batch = 0;  // samples per step, under packing
  KeyNames key;  // the keys that messages name: train.micro_batch, or dit.micro_batch ...
};

// Unpacked: the micro-batch (0 .. world_size * grad_accum - 1 within a global batch) that
// `rank` runs at accumulation micro-step `accum_step`. Micro-step a runs
// micro-batches aW .. aW+W-1 across the world, so the ranks walk the global
// batch front to back one contiguous slice per micro-step, in the order a
// single rank would: per-micro-step quantities (logged losses, the padding at
// the end of the last batch) line up between world sizes.
inline int64_t micro_batch_index(int accum_step, int world_size, int rank) {
  return static_cast<int64_t>(accum_step) * world_size + rank;
}

// train.global_batch / (train.micro_batch x world_size). Throws UsageError when
// that is not a whole number, suggesting the nearest global batches that are.
int64_t derive_grad_accum(int64_t global_batch, int64_t micro_batch, int world_size, const KeyNames& key = {});

// The largest micro-batch of at most `cap` that splits a rank's `share` of a
// global batch into equal micro-batches (1 divides any); 0 when cap < 1.
int64_t split_at_most(int64_t share, int64_t cap);

class Sampler {
 public:
  // Throws UsageError for a dataset that cannot fill one global batch with
  // drop_last, or for a non-positive dataset size or micro-batch.
  explicit Sampler(const SamplerOptions& options);

  const SamplerOptions& options() const { return options_; }
  int64_t global_batch() const { return global_batch_; }
  int64_t steps_per_epoch() const { return steps_per_epoch_; }
  // Valid samples in the whole global batch of a step, identical on every rank:
  // the denominator for a loss averaged over the global batch.
  int64_t num_valid_in_step(int64_t step_in_epoch) const;
  bool packed() const { return options_.pack_tokens > 0; }
  // Forward passes a rank runs in this step: grad_accum, or under packing as
  // many as the step's sequences need.
  int64_t micro_steps(int64_t epoch, int64_t step_in_epoch) const;
  // Packed sequences the step's samples fill, over all ranks (packed only).
  int64_t sequence_count(int64_t epoch, int64_t step_in_epoch) const;
  // Thread-safe: the epoch's order is built once and shared, so a prefetch
  // thread may ask for the next epoch while the loop finishes this one.
  MicroBatch micro_batch(int64_t epoch, int64_t step_in_epoch, int accum_step) const;

 private:
  struct OrderCache;
  std::shared_ptr<const std::vector<int64_t>> order(int64_t epoch) const;
  // The step's sequences as positions in the epoch's order.
  std::vector<std::vector<int64_t>> sequences(int64_t epoch, int64_t step_in_epoch) const;
  SamplerOptions options_;
  int64_t global_batch_;
  int64_t steps_per_epoch_;
  std::shared_ptr<OrderCache> cache_;
};

}  // namespace tandem
