#include "tandem/dist/cuda_info.h"

#include <stdexcept>

#if TANDEM_TORCH_HAS_CUDA
#include <cuda_runtime_api.h>
#endif
#if TANDEM_HAVE_NCCL
#include <nccl.h>
#endif

namespace tandem {

#if TANDEM_TORCH_HAS_CUDA
namespace {

// CUDA encodes versions as 1000 * major + 10 * minor.
std::string cuda_version_text(int v) { return std::to_string(v / 1000) + "." + std::to_string(v % 1000 / 10); }

}  // namespace

bool cuda_built() { return true; }

GpuInfo gpu_info(int device_index) {
  GpuInfo g;
  g.index = device_index;
  cudaDeviceProp prop{};
  if (cudaGetDeviceProperties(&prop, device_index) != cudaSuccess) {
    cudaGetLastError();
    return g;
  }
  g.name = prop.name;
  g.bus_id = gpu_bus_id(device_index);
  g.total_bytes = static_cast<int64_t>(prop.totalGlobalMem);
  g.cc_major = prop.major;
  g.cc_minor = prop.minor;
  g.sm_count = prop.multiProcessorCount;
  return g;
}

std::vector<GpuInfo> visible_gpus() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    cudaGetLastError();  // no driver or no device: not an error for us
    return {};
  }
  std::vector<GpuInfo> gpus;
  for (int i = 0; i < count; ++i) {
    GpuInfo g = gpu_info(i);
    if (!g.name.empty()) gpus.push_back(g);
  }
  return gpus;
}

std::string cuda_runtime_version() {
  int v = 0;
  return cudaRuntimeGetVersion(&v) == cudaSuccess ? cuda_version_text(v) : "none";
}

std::string cuda_driver_version() {
  int v = 0;
  return cudaDriverGetVersion(&v) == cudaSuccess && v > 0 ? cuda_version_text(v) : "none";
}

std::string gpu_bus_id(int device_index) {
  char id[64] = {};
  if (cudaDeviceGetPCIBusId(id, sizeof id, device_index) != cudaSuccess) return "unknown";
  return id;
}

void select_gpu(int device_index) {
  const cudaError_t rc = cudaSetDevice(device_index);
  if (rc != cudaSuccess)
    throw std::runtime_error("cudaSetDevice(" + std::to_string(device_index) + ") failed: " + cudaGetErrorString(rc));
}

#else

bool cuda_built() { return false; }
void select_gpu(int) {}
std::vector<GpuInfo> visible_gpus() { return {}; }
GpuInfo gpu_info(int device_index) {
  GpuInfo g;
  g.index = device_index;
  return g;
}
std::string cuda_runtime_version() { return "none"; }
std::string cuda_driver_version() { return "none"; }
std::string gpu_bus_id(int) { return "none"; }

#endif

std::string nccl_version() {
#if TANDEM_HAVE_NCCL
  int code = 0;
  if (ncclGetVersion(&code) != ncclSuccess) return "none";
  // major * 10000 + minor * 100 + patch since NCCL 2.9.
  return std::to_string(code / 10000) + "." + std::to_string(code / 100 % 100) + "." + std::to_string(code % 100);
#else
  return "none";
#endif
}

}  // namespace tandem
