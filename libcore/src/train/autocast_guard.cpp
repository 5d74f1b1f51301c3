#include "tandem/train/autocast_guard.h"

#include <ATen/autocast_mode.h>

#include <stdexcept>

namespace tandem {

AutocastGuard::AutocastGuard(Precision precision, bool cuda) : active_(precision != Precision::FP32), cuda_(cuda) {
  if (!active_) return;
  if (precision == Precision::FP16 && !cuda) throw std::invalid_argument("AutocastGuard: fp16 autocast needs CUDA");
  previous_ = compat::autocast_state(cuda);
  compat::set_autocast_state(cuda, {true, precision == Precision::FP16 ? at::kHalf : at::kBFloat16});
  at::autocast::increment_nesting();
}

AutocastGuard::~AutocastGuard() {
  if (!active_) return;
  if (at::autocast::decrement_nesting() == 0) at::autocast::clear_cache();
  compat::set_autocast_state(cuda_, previous_);
}

}  // namespace tandem
