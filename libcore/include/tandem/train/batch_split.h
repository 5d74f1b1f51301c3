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
#include <cstdint>
#include <memory>

#include "tandem/data/sampler.h"

namespace tandem {

class BatchSplit {
 public:
  // `options` hold the first cut (micro_batch, grad_accum); throws as Sampler.
  explicit BatchSplit(const SamplerOptions& options);

  int64_t micro_batch() const { return sampler_->options().micro_batch; }
  int64_t accum() const { return sampler_->options().grad_accum; }
  // A rank's samples per optimizer step.
  int64_t share() const { return micro_batch() * accum(); }
  const Sampler& sampler() const { return *sampler_; }
  // The micro-batch running out of memory left the run at; 0: none.
  int64_t oom_cap() const { return oom_cap_; }

  void resplit(int64_t micro_batch);
  // The same cut of another seed's order (train.seed = -1 resumed).
  void reseed(uint64_t seed);
  bool back_off();
  void cap_at(int64_t cap);

 private:
  void replace(const SamplerOptions& options);

  std::unique_ptr<Sampler> sampler_;
  int64_t oom_cap_ = 0;
};

}  // namespace tandem
