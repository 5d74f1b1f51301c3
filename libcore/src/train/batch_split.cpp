#include "tandem/train/batch_split.h"

#include <stdexcept>
#include <string>

namespace tandem {

BatchSplit::BatchSplit(const SamplerOptions& options) : sampler_(std::make_unique<Sampler>(options)) {}

void BatchSplit::replace(const SamplerOptions& options) { sampler_ = std::make_unique<Sampler>(options); }

void BatchSplit::resplit(int64_t micro_batch) {
  const int64_t share = this->share();
  if (micro_batch < 1 || share % micro_batch != 0)
    throw std::invalid_argument("BatchSplit::resplit: micro-batch " + std::to_string(micro_batch) +
                                " does not divide a rank's share of " + std::to_string(share));
  SamplerOptions options = sampler_->options();
  options.micro_batch = micro_batch;
  options.grad_accum = share / micro_batch;
  replace(options);
}

void BatchSplit::reseed(uint64_t seed) {
  SamplerOptions options = sampler_->options();
  options.seed = seed;
  replace(options);
}

bool BatchSplit::back_off() {
  const int64_t smaller = split_at_most(share(), micro_batch() / 2);
  if (smaller < 1) return false;
  resplit(smaller);
  oom_cap_ = smaller;
  return true;
}

void BatchSplit::cap_at(int64_t cap) {
  oom_cap_ = cap;
  if (micro_batch() > cap) resplit(split_at_most(share(), cap));
}

}  // namespace tandem
