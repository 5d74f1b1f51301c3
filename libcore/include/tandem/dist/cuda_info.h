#pragma once
// What the CUDA runtime, driver and NCCL say about this machine, asked of them
// directly (not of LibTorch, which may be a CPU build on a GPU machine). In a
// build without the CUDA toolkit every answer is "none".
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
  bool bf16() const { return cc_major >= 8; }
};

bool cuda_built();
std::vector<GpuInfo> visible_gpus();  // what CUDA_VISIBLE_DEVICES lets us see
std::string cuda_runtime_version();   // "13.0", or "none"
std::string cuda_driver_version();    // highest CUDA the driver supports, or "none"
std::string nccl_version();           // of the loaded library, or "none"
std::string gpu_bus_id(int device_index);

}  // namespace tandem
