#pragma once
// How each rank's share of a global batch is cut into forward passes: the
// micro-batch, the accumulation, and the Sampler that deals the samples in
// that cut. During a run this is the one place the micro-batch and the
// accumulation live; train.micro_batch and train.global_batch only say where
// they start, and everything else reads them here.
//
// The contract:
// - micro_batch() x accum() x ranks = the sampler's global batch, the same
//   all run long: a cut changes how many forward passes a step takes, never
//   which samples it learns from, and since the objective is a sum over the
//   global batch divided by its weight, the step's gradient is the same up to
//   the order of float sums.
// - resplit(m) cuts a rank's share into micro-batches of m, which must divide
//   it (std::invalid_argument otherwise).
// - back_off(), after running out of memory: the largest micro-batch of at
//   most half the present one that divides the share, which becomes the cap
//   for the rest of the run (oom_cap(), kept in checkpoints); false, and
//   nothing changed, when there is none (micro-batch 1).
// - cap_at(cap), on resuming a run that backed off under the same settings:
//   the cap again, and a micro-batch above it cut down to fit under it.
// - Every cut replaces the sampler: whatever reads it (a Loader's thread) must
//   be gone first.
// - Packed (SamplerOptions::pack_tokens): the micro-batch counts packed
//   sequences, a step takes micro_steps(step) forward passes (the same on
//   every rank, the step's samples still the same), accum() means nothing,
//   and share() is the most sequences a rank can get in a step (every
//   sample alone). Any micro-batch of 1 or more is a cut; back_off() halves
//   it, a sequence never cut.
#include <cstdint>
#include <memory>
#include <string>

#include "tandem/data/sampler.h"

namespace tandem {

class BatchSplit {
 public:
  // `options` hold the first cut (micro_batch, grad_accum); throws as Sampler.
  explicit BatchSplit(const SamplerOptions& options);

  int64_t micro_batch() const { return sampler_->options().micro_batch; }
  int64_t accum() const { return sampler_->options().grad_accum; }
  bool packed() const { return sampler_->packed(); }
  // A rank's samples per optimizer step; packed, its most sequences.
  int64_t share() const;
  // Forward passes of run step `step` (counted over epochs): accum(), or
  // under packing what that step's sequences need.
  int64_t micro_steps(int64_t step) const;
  // The cut in words for the log: "4 x accumulation 8", or "4 packed
  // sequences of 1024 tokens".
  std::string describe() const;
  const Sampler& sampler() const { return *sampler_; }
  // The micro-batch running out of memory left the run at; 0: none.
  int64_t oom_cap() const { return oom_cap_; }

  void resplit(int64_t micro_batch);
  // The same cut of another seed's order (train.seed = -1 resumed).
  void reseed(uint64_t seed);
  // Packed, `step` (the one that ran out of memory) says how many sequences
  // a rank ran at most, which is what is halved.
  bool back_off(int64_t step = -1);
  void cap_at(int64_t cap);

 private:
  void replace(const SamplerOptions& options);

  std::unique_ptr<Sampler> sampler_;
  int64_t oom_cap_ = 0;
};

}  // namespace tandem
