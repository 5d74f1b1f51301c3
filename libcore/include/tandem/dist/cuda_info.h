#pragma once
// What the CUDA runtime, driver and NCCL say about this machine, asked of them
// directly: the runtime is the one LibTorch loads (cmake/TorchCuda.cmake), so
// these work whenever LibTorch has CUDA, NCCL or not. Against a CPU LibTorch
// every answer is "none" (and nccl_version() without the NCCL backend).
#include <cstdint>
#include <string>
#include <vector>

namespace tandem {

struct GpuInfo {
  int index = 0;
  std::string name;
  std::string bus_id;  // "0000:3b:00.0": identifies a GPU across masked views
  int64_t total_bytes = 0;
  int cc_major = 0, cc_minor = 0;
  int sm_count = 0;  // multiprocessors: a MIG slice's own, not its GPU's
  bool bf16() const { return cc_major >= 8; }
};

bool cuda_built();
std::vector<GpuInfo> visible_gpus();  // what CUDA_VISIBLE_DEVICES lets us see
// Visible GPU `device_index` alone; a GpuInfo with an empty name when CUDA
// cannot describe it (or in a CPU build).
GpuInfo gpu_info(int device_index);
std::string cuda_runtime_version();   // "13.0", or "none"
std::string cuda_driver_version();    // highest CUDA the driver supports, or "none"
std::string nccl_version();           // of the loaded library, or "none"
std::string gpu_bus_id(int device_index);

// Makes `device_index` the calling thread's CUDA device. CUDA's current device
// is per thread and starts at 0, so every thread that touches CUDA (the main
// thread after placement, the loader's pinning threads, the watchdog polling
// events) must call this first, or rank k opens a second context on GPU 0.
// Throws std::runtime_error when CUDA refuses; a no-op in a CPU build.
void select_gpu(int device_index);

}  // namespace tandem
