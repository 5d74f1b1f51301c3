#pragma once
// NVML, the driver's monitoring library, opened at run time: tandem builds and
// runs where no NVIDIA driver is installed, so it may not link against it.
#include <memory>
#include <vector>

#include "tandem/obs/gpu_monitor.h"

namespace tandem::nvml {

struct Api;

// One initialisation of NVML; NVML counts them, so several may be open at once.
class Session {
 public:
  // nullptr when the library is absent or refuses to start (no driver loaded).
  static std::unique_ptr<Session> open();
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  unsigned device_count() const;
  // Every GPU of the node; a query a device does not support leaves its field empty.
  std::vector<GpuSample> sample() const;

 private:
  explicit Session(const Api& api) : api_(api) {}
  const Api& api_;
};

}  // namespace tandem::nvml
