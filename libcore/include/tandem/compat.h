#pragma once
// The one place that knows which LibTorch it is built against: tandem builds
// with LibTorch 1.13 and 2.x, whose C++ APIs differ in a few calls. Everything
// else calls these instead, so a new LibTorch means editing compat.cpp only.
#include <c10/core/ScalarType.h>

namespace tandem::compat {

// Autocast as the current thread sees it for one device type: CUDA when `cuda`,
// else CPU.
struct AutocastState {
  bool enabled = false;
  at::ScalarType dtype = at::kFloat;
};

AutocastState autocast_state(bool cuda);
void set_autocast_state(bool cuda, const AutocastState& state);

}  // namespace tandem::compat
