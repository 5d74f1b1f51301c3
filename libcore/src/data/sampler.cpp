#include "tandem/data/sampler.h"

#include <algorithm>
#include <mutex>
#include <numeric>
#include <random>
#include <stdexcept>
#include <vector>

#include "tandem/data/longest_first.h"
#include "tandem/data/packing.h"
#include "tandem/error.h"
#include "tandem/obs/log.h"
#include "tandem/random.h"

namespace tandem {
namespace {

// Fisher-Yates driven by our own engine, seeded from (seed, epoch) alone, so
// the order is the same on every rank, platform and LibTorch version, and no
// other use of randomness (torch's generators, augmentation) can shift it.
// mt19937_64 (its stream is fixed by the standard) with the epoch salted by
// the seed: the orders every run so far has trained on.
std::vector<int64_t> shuffled(int64_t n, uint64_t seed, int64_t epoch) {
  std::vector<int64_t> order(n);
  for (int64_t i = 0; i < n; ++i) order[i] = i;
  std::mt19937_64 engine(mix_seed(static_cast<uint64_t>(epoch), seed));
  shuffle(order, engine);
  return order;
}

}  // namespace

// Two epochs, slot = epoch % 2, so a prefetch thread already on epoch e + 1
// and the loop still on epoch e do not rebuild each other's order per call.
struct Sampler::OrderCache {
  std::mutex mu;
  int64_t epoch[2] = {-1, -1};
  std::shared_ptr<const std::vector<int64_t>> order[2];
};

int64_t derive_grad_accum(int64_t global_batch, int64_t micro_batch, int world_size, const KeyNames& key) {
  if (micro_batch <= 0) throw UsageError(log::cat(key("micro_batch"), " must be positive, got ", micro_batch));
  if (global_batch <= 0) throw UsageError(log::cat(key("global_batch"), " must be positive, got ", global_batch));
  if (world_size <= 0) throw std::invalid_argument(log::cat("world size ", world_size));
  const int64_t unit = micro_batch * world_size;
  if (global_batch % unit == 0) return global_batch / unit;
  const int64_t below_it = global_batch / unit * unit;
  throw UsageError(log::cat(key("global_batch"), " = ", global_batch, " must be a multiple of ", key("micro_batch"),
                            " (", micro_batch, ") x world size (", world_size, ") = ", unit,
                            "; nearest valid: ", below_it > 0 ? log::cat(below_it, " or ") : "", below_it + unit,
                            ", or change ", key("micro_batch")));
}

int64_t split_at_most(int64_t share, int64_t cap) {
  for (int64_t m = std::min(share, cap); m >= 1; --m)
    if (share % m == 0) return m;
  return 0;
}

Sampler::Sampler(const SamplerOptions& options) : options_(options), cache_(std::make_shared<OrderCache>()) {
  const SamplerOptions& o = options_;
  if (o.dataset_size <= 0) throw UsageError(log::cat("the dataset has no samples to train on (", o.dataset_size, ")"));
  if (o.micro_batch <= 0) throw UsageError(log::cat(o.key("micro_batch"), " must be positive, got ", o.micro_batch));
  if (o.grad_accum <= 0 || o.world_size <= 0 || o.rank < 0 || o.rank >= o.world_size)
    throw std::invalid_argument(
        log::cat("sampler: grad_accum ", o.grad_accum, ", rank ", o.rank, " of ", o.world_size));
  if (o.lengths && static_cast<int64_t>(o.lengths->size()) != o.dataset_size)
    throw std::invalid_argument(log::cat("sampler: ", o.lengths->size(), " lengths for ", o.dataset_size, " samples"));
  if (o.pack_tokens > 0 && (!o.lengths || o.global_batch <= 0))
    throw std::invalid_argument(log::cat("sampler: packing needs lengths and a global batch, got ", o.global_batch));
  global_batch_ = o.pack_tokens > 0 ? o.global_batch : o.micro_batch * o.grad_accum * o.world_size;
  if (o.drop_last && o.dataset_size < global_batch_)
    throw UsageError(log::cat(
        "the dataset has ", o.dataset_size, " samples, fewer than one global batch of ", global_batch_,
        o.pack_tokens > 0 ? "" : log::cat(" (", o.key("micro_batch"), " ", o.micro_batch, " x grad accumulation ",
                                          o.grad_accum, " x world size ", o.world_size, ")"),
        ", so dropping the last partial batch leaves nothing to train on; lower ", o.key("global_batch")));
  steps_per_epoch_ =
      o.drop_last ? o.dataset_size / global_batch_ : (o.dataset_size + global_batch_ - 1) / global_batch_;
}

int64_t Sampler::num_valid_in_step(int64_t step_in_epoch) const {
  if (step_in_epoch < 0 || step_in_epoch >= steps_per_epoch_)
    throw std::out_of_range(log::cat("step ", step_in_epoch, " of ", steps_per_epoch_));
  return std::min(global_batch_, options_.dataset_size - step_in_epoch * global_batch_);
}

std::shared_ptr<const std::vector<int64_t>> Sampler::order(int64_t epoch) const {
  if (!options_.shuffle) return nullptr;
  std::lock_guard<std::mutex> lock(cache_->mu);
  const int slot = static_cast<int>(epoch % 2);
  if (cache_->epoch[slot] != epoch) {
    cache_->order[slot] =
        std::make_shared<const std::vector<int64_t>>(shuffled(options_.dataset_size, options_.seed, epoch));
    cache_->epoch[slot] = epoch;
  }
  return cache_->order[slot];
}

// Packed again at each call: a step's few hundred samples pack in
// microseconds, on the loader's thread, and the sampler keeps no state.
std::vector<std::vector<int64_t>> Sampler::sequences(int64_t epoch, int64_t step_in_epoch) const {
  const auto ord = order(epoch);
  const int64_t first = step_in_epoch * global_batch_, count = num_valid_in_step(step_in_epoch);
  std::vector<int64_t> lengths(static_cast<size_t>(count));
  for (int64_t k = 0; k < count; ++k) {
    const int64_t p = first + k;
    lengths[k] = (*options_.lengths)[ord ? (*ord)[p] : p];
  }
  // First-fit decreasing says how few sequences hold the step; spread over
  // that count rounded up to a multiple of the world size, every rank gets
  // as many sequences of about the same fill, and none waits for another at
  // the step's end.
  auto packed = pack_first_fit_decreasing(lengths, options_.pack_tokens);
  const int64_t world = options_.world_size;
  const int64_t slots = (static_cast<int64_t>(packed.size()) + world - 1) / world * world;
  if (auto even = pack_evenly(lengths, options_.pack_tokens, slots); !even.empty()) packed = std::move(even);
  for (auto& sequence : packed)
    for (int64_t& k : sequence) k += first;
  return packed;
}

int64_t Sampler::micro_steps(int64_t epoch, int64_t step_in_epoch) const {
  if (!packed()) return options_.grad_accum;
  const int64_t per_step = options_.world_size * options_.micro_batch;
  return (sequence_count(epoch, step_in_epoch) + per_step - 1) / per_step;
}

int64_t Sampler::sequence_count(int64_t epoch, int64_t step_in_epoch) const {
  return static_cast<int64_t>(sequences(epoch, step_in_epoch).size());
}

namespace {

// Rank r's k-th pick from a run of world_size x per_rank sorted items: dealt
// in turn, every other round backwards (0 1 1 0 0 1 ...), so that each
// rank's picks span the same lengths and none always takes the longest.
int64_t dealt(int64_t k, int world_size, int rank) {
  return k * world_size + (k % 2 == 0 ? rank : world_size - 1 - rank);
}

}  // namespace

MicroBatch Sampler::micro_batch(int64_t epoch, int64_t step_in_epoch, int accum_step) const {
  const SamplerOptions& o = options_;
  const auto cursor = [&](int64_t micro_steps) {
    return log::cat("sampler cursor: epoch ", epoch, ", step ", step_in_epoch, " of ", steps_per_epoch_,
                    ", micro-step ", accum_step, " of ", micro_steps);
  };
  if (epoch < 0 || step_in_epoch < 0 || step_in_epoch >= steps_per_epoch_ || accum_step < 0)
    throw std::out_of_range(cursor(-1));
  const auto ord = order(epoch);
  // Position p of the epoch's order, past the end wrapped to its start: a pad
  // is a real sample, so the forward pass is ordinary, and only its weight is
  // zero.
  const auto sample = [&](int64_t p) { return ord ? (*ord)[p % o.dataset_size] : p % o.dataset_size; };
  MicroBatch batch;
  if (packed()) {
    const auto packed = sequences(epoch, step_in_epoch);
    const int64_t run = static_cast<int64_t>(accum_step) * o.world_size * o.micro_batch;
    if (run >= static_cast<int64_t>(packed.size())) throw std::out_of_range(cursor(micro_steps(epoch, step_in_epoch)));
    for (int64_t k = 0; k < o.micro_batch; ++k) {
      const auto j = static_cast<size_t>(run + dealt(k, o.world_size, o.rank));
      if (j >= packed.size()) continue;
      const int64_t sequence = batch.indices.empty() ? 0 : batch.sequence.back() + 1;
      for (const int64_t p : packed[j]) {
        batch.indices.push_back(sample(p));
        batch.valid.push_back(1);
        batch.sequence.push_back(sequence);
      }
    }
    if (batch.indices.empty()) {
      int64_t shortest = sample(packed.front().front());
      for (const auto& sequence : packed)
        for (const int64_t p : sequence)
          if ((*o.lengths)[sample(p)] < (*o.lengths)[shortest]) shortest = sample(p);
      batch.indices = {shortest};
      batch.valid = {0};
      batch.sequence = {0};
    }
    return batch;
  }
  if (accum_step >= o.grad_accum) throw std::out_of_range(cursor(o.grad_accum));
  // The micro-batch's positions in the epoch's order: the j-th run of
  // micro_batch of the step's; or, grouped, micro-step a's run of
  // world_size x micro_batch of the step's sorted by length, dealt to the
  // ranks.
  const int64_t first = step_in_epoch * global_batch_;
  std::vector<int64_t> positions(o.micro_batch);
  if (!o.lengths) {
    std::iota(positions.begin(), positions.end(),
              first + micro_batch_index(accum_step, o.world_size, o.rank) * o.micro_batch);
  } else {
    // Padding slots after every real sample, by length among themselves.
    const std::vector<int64_t> sorted = longest_first(global_batch_, [&](int64_t k) {
      const int64_t length = (*o.lengths)[sample(first + k)];
      return first + k < o.dataset_size ? length : length - (int64_t{1} << 62);
    });
    const int64_t run = accum_step * o.world_size * o.micro_batch;
    for (int64_t k = 0; k < o.micro_batch; ++k) positions[k] = first + sorted[run + dealt(k, o.world_size, o.rank)];
  }
  batch.indices.reserve(o.micro_batch);
  batch.valid.reserve(o.micro_batch);
  for (const int64_t p : positions) {
    batch.indices.push_back(sample(p));
    batch.valid.push_back(p < o.dataset_size ? 1 : 0);
  }
  return batch;
}

}  // namespace tandem
