#include "tandem/compat.h"

#include <ATen/autocast_mode.h>
#include <torch/version.h>

// True when the LibTorch being compiled against is MAJOR.MINOR or newer.
#define TANDEM_TORCH_AT_LEAST(major, minor) \
  (TORCH_VERSION_MAJOR > (major) || (TORCH_VERSION_MAJOR == (major) && TORCH_VERSION_MINOR >= (minor)))

namespace tandem::compat {

// LibTorch 2.4 made autocast's state per device type, at::autocast::*(DeviceType),
// and deprecated the per-device functions (set_enabled for CUDA, set_cpu_enabled,
// set_autocast_gpu_dtype...) that are all 1.13 through 2.3 have.
#if TANDEM_TORCH_AT_LEAST(2, 4)

AutocastState autocast_state(bool cuda) {
  const at::DeviceType device = cuda ? at::kCUDA : at::kCPU;
  return {at::autocast::is_autocast_enabled(device), at::autocast::get_autocast_dtype(device)};
}

void set_autocast_state(bool cuda, const AutocastState& state) {
  const at::DeviceType device = cuda ? at::kCUDA : at::kCPU;
  at::autocast::set_autocast_dtype(device, state.dtype);
  at::autocast::set_autocast_enabled(device, state.enabled);
}

#else

AutocastState autocast_state(bool cuda) {
  if (cuda) return {at::autocast::is_enabled(), at::autocast::get_autocast_gpu_dtype()};
  return {at::autocast::is_cpu_enabled(), at::autocast::get_autocast_cpu_dtype()};
}

void set_autocast_state(bool cuda, const AutocastState& state) {
  if (cuda) {
    at::autocast::set_autocast_gpu_dtype(state.dtype);
    at::autocast::set_enabled(state.enabled);
  } else {
    at::autocast::set_autocast_cpu_dtype(state.dtype);
    at::autocast::set_cpu_enabled(state.enabled);
  }
}

#endif

}  // namespace tandem::compat
