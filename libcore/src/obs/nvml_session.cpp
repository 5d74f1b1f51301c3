#include "nvml_session.h"

#include <dlfcn.h>

#include <optional>
#include <type_traits>

namespace tandem::nvml {

// The few NVML declarations used, as nvml.h has them, so that building needs
// no CUDA toolkit. Their layout is NVML's stable ABI.
using Return = int;  // nvmlReturn_t, a C enum
constexpr Return kSuccess = 0;
constexpr int kTemperatureGpu = 0;  // NVML_TEMPERATURE_GPU
constexpr unsigned kNameSize = 96;  // NVML_DEVICE_NAME_V2_BUFFER_SIZE
using Device = struct nvmlDevice_st*;
struct Utilization {  // nvmlUtilization_t
  unsigned int gpu, memory;
};
struct Memory {  // nvmlMemory_t
  unsigned long long total, free, used;
};

struct Api {
  Return (*init)();
  Return (*shutdown)();
  Return (*device_count)(unsigned*);
  Return (*handle_by_index)(unsigned, Device*);
  Return (*utilization)(Device, Utilization*);
  Return (*memory)(Device, Memory*);
  Return (*temperature)(Device, int, unsigned*);
  Return (*name)(Device, char*, unsigned);
};

namespace {

// Loaded once and never unloaded: later sessions reuse it, and unloading a
// driver library buys nothing.
const Api* load() {
  static const std::optional<Api> api = []() -> std::optional<Api> {
    void* lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) return std::nullopt;
    Api a{};
    bool found = true;
    auto bind = [&](auto& fn, const char* symbol) {
      fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(lib, symbol));
      found = found && fn != nullptr;
    };
    bind(a.init, "nvmlInit_v2");
    bind(a.shutdown, "nvmlShutdown");
    bind(a.device_count, "nvmlDeviceGetCount_v2");
    bind(a.handle_by_index, "nvmlDeviceGetHandleByIndex_v2");
    bind(a.utilization, "nvmlDeviceGetUtilizationRates");
    bind(a.memory, "nvmlDeviceGetMemoryInfo");
    bind(a.temperature, "nvmlDeviceGetTemperature");
    bind(a.name, "nvmlDeviceGetName");
    if (!found) {
      dlclose(lib);
      return std::nullopt;
    }
    return a;
  }();
  return api ? &*api : nullptr;
}

}  // namespace

std::unique_ptr<Session> Session::open() {
  const Api* api = load();
  if (!api || api->init() != kSuccess) return nullptr;
  return std::unique_ptr<Session>(new Session(*api));
}

Session::~Session() { api_.shutdown(); }

unsigned Session::device_count() const {
  unsigned count = 0;
  return api_.device_count(&count) == kSuccess ? count : 0;
}

std::vector<GpuSample> Session::sample() const {
  std::vector<GpuSample> samples;
  const unsigned count = device_count();
  for (unsigned i = 0; i < count; ++i) {
    Device device = nullptr;
    // A container may list GPUs its cgroup forbids: those are not ours to report.
    if (api_.handle_by_index(i, &device) != kSuccess) continue;
    GpuSample s;
    s.index = i;
    char name[kNameSize] = {};
    if (api_.name(device, name, kNameSize) == kSuccess) s.name = name;
    Utilization util{};
    if (api_.utilization(device, &util) == kSuccess) s.util_percent = util.gpu;
    Memory mem{};
    if (api_.memory(device, &mem) == kSuccess) {
      s.mem_used_bytes = mem.used;
      s.mem_total_bytes = mem.total;
    }
    unsigned temp = 0;
    if (api_.temperature(device, kTemperatureGpu, &temp) == kSuccess) s.temperature_c = temp;
    samples.push_back(std::move(s));
  }
  return samples;
}

}  // namespace tandem::nvml
