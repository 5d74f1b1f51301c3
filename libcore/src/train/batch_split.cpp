#include "tandem/train/batch_split.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace tandem {

BatchSplit::BatchSplit(const SamplerOptions& options) : sampler_(std::make_unique<Sampler>(options)) {}

void BatchSplit::replace(const SamplerOptions& options) { sampler_ = std::make_unique<Sampler>(options); }

int64_t BatchSplit::share() const {
  const SamplerOptions& o = sampler_->options();
  return packed() ? (o.global_batch + o.world_size - 1) / o.world_size : micro_batch() * accum();
}

int64_t BatchSplit::micro_steps(int64_t step) const {
  const int64_t spe = sampler_->steps_per_epoch();
  return sampler_->micro_steps(step / spe, step % spe);
}

std::string BatchSplit::describe() const {
  if (!packed()) return std::to_string(micro_batch()) + " x accumulation " + std::to_string(accum());
  return std::to_string(micro_batch()) + " packed sequences of " + std::to_string(sampler_->options().pack_tokens) +
         " tokens";
}

void BatchSplit::resplit(int64_t micro_batch) {
  const int64_t share = this->share();
  if (packed() && micro_batch >= 1) {
    SamplerOptions options = sampler_->options();
    options.micro_batch = micro_batch;
    replace(options);
    return;
  }
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

bool BatchSplit::back_off(int64_t step) {
  int64_t ran = micro_batch();
  if (packed() && step >= 0) {
    const int64_t spe = sampler_->steps_per_epoch(), world = sampler_->options().world_size;
    ran = std::min(ran, (sampler_->sequence_count(step / spe, step % spe) + world - 1) / world);
  }
  const int64_t smaller = packed() ? ran / 2 : split_at_most(share(), micro_batch() / 2);
  if (smaller < 1) return false;
  resplit(smaller);
  oom_cap_ = smaller;
  return true;
}

void BatchSplit::cap_at(int64_t cap) {
  oom_cap_ = cap;
  if (micro_batch() > cap) resplit(packed() ? cap : split_at_most(share(), cap));
}

}  // namespace tandem
