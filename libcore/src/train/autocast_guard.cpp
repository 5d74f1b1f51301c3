#include "tandem/train/autocast_guard.h"

#include <ATen/autocast_mode.h>

#include <stdexcept>

namespace tandem {

namespace {

compat::AutocastState state_for(Precision precision, bool cuda) {
  if (precision == Precision::FP16 && !cuda) throw std::invalid_argument("AutocastGuard: fp16 autocast needs CUDA");
  return {true, precision == Precision::FP16 ? at::kHalf : at::kBFloat16};
}

}  // namespace

AutocastGuard::AutocastGuard(Precision precision, bool cuda) : active_(precision != Precision::FP32), cuda_(cuda) {
  if (active_) enter(state_for(precision, cuda));
}

AutocastGuard::AutocastGuard(bool cuda, const compat::AutocastState& state) : active_(true), cuda_(cuda) { enter(state); }

void AutocastGuard::enter(const compat::AutocastState& state) {
  previous_ = compat::autocast_state(cuda_);
  compat::set_autocast_state(cuda_, state);
  at::autocast::increment_nesting();
}

AutocastGuard::~AutocastGuard() {
  if (!active_) return;
  if (at::autocast::decrement_nesting() == 0) at::autocast::clear_cache();
  compat::set_autocast_state(cuda_, previous_);
}

}  // namespace tandem
