#include "tandem/train/loss_scaler.h"

#include <cmath>
#include <stdexcept>
#include <string>

#include "tandem/error.h"

namespace tandem {
namespace {

const AttrValue& entry(const CheckpointState& state, const std::string& key) {
  const auto it = state.find(key);
  if (it == state.end()) throw UsageError("checkpoint state has no '" + key + "' (loss scaler)");
  return it->second;
}

int64_t count_entry(const CheckpointState& state, const std::string& key) {
  const auto* value = std::get_if<int64_t>(&entry(state, key));
  if (!value || *value < 0) throw UsageError("checkpoint state '" + key + "' must be an integer of 0 or more");
  return *value;
}

double scale_entry(const CheckpointState& state, const std::string& key) {
  const AttrValue& value = entry(state, key);
  double scale = 0.0;
  if (const auto* d = std::get_if<double>(&value)) scale = *d;
  if (const auto* i = std::get_if<int64_t>(&value)) scale = static_cast<double>(*i);
  if (!(scale > 0.0) || !std::isfinite(scale)) {
    throw UsageError("checkpoint state '" + key + "' must be a positive finite number");
  }
  return scale;
}

}  // namespace

LossScaler::LossScaler(bool enabled, LossScalerOptions options)
    : enabled_(enabled), options_(options), scale_(options.init_scale) {
  if (!(options.init_scale > 0.0) || !(options.growth_factor > 1.0) || !(options.backoff_factor > 0.0) ||
      !(options.backoff_factor < 1.0) || options.growth_interval < 1) {
    throw std::invalid_argument(
        "LossScaler: needs init_scale > 0, growth_factor > 1, 0 < backoff_factor < 1 and "
        "growth_interval >= 1");
  }
}

bool LossScaler::update(bool grads_finite) {
  if (!enabled_) return true;
  if (!grads_finite) {
    scale_ *= options_.backoff_factor;
    good_steps_ = 0;
    ++skipped_;
    return false;
  }
  if (++good_steps_ >= options_.growth_interval) {
    // GradScaler's rule too: a scale that would overflow a double stays put.
    const double grown = scale_ * options_.growth_factor;
    if (std::isfinite(grown)) scale_ = grown;
    good_steps_ = 0;
  }
  return true;
}

CheckpointState LossScaler::state() const {
  return {{"loss_scale", scale_}, {"loss_scale_good_steps", good_steps_}, {"loss_scale_skipped", skipped_}};
}

void LossScaler::load_state(const CheckpointState& state) {
  const double scale = scale_entry(state, "loss_scale");
  const int64_t good_steps = count_entry(state, "loss_scale_good_steps");
  const int64_t skipped = count_entry(state, "loss_scale_skipped");
  scale_ = scale;
  good_steps_ = good_steps;
  skipped_ = skipped;
}

}  // namespace tandem
