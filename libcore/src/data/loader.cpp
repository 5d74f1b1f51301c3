#include "tandem/data/loader.h"

#include <torch/torch.h>

#include <utility>

#include "tandem/dist/cuda_info.h"

namespace tandem {

Batch pin(const Batch& batch) {
  Batch out;
  for (const auto& [name, tensor] : batch)
    out.emplace(name, tensor.defined() && tensor.device().is_cpu() ? tensor.pin_memory() : tensor);
  return out;
}

Batch to_device(const Batch& batch, const c10::Device& device) {
  Batch out;
  for (const auto& [name, tensor] : batch) {
    if (!tensor.defined() || tensor.device() == device) {
      out.emplace(name, tensor);
    } else if (device.is_cuda()) {
      // Only a copy from page-locked memory is truly asynchronous; from pageable
      // memory non_blocking silently degrades to a synchronous copy.
      const at::Tensor host = tensor.device().is_cpu() ? tensor.pin_memory() : tensor;
      out.emplace(name, host.to(device, host.scalar_type(), /*non_blocking=*/true));
    } else {
      // Blocking, so the caller may read the host copy at once.
      out.emplace(name, tensor.to(device, tensor.scalar_type()));
    }
  }
  return out;
}

Loader::Make pinned_for(Loader::Make make, const c10::Device& target) {
  if (!target.is_cuda()) return make;
  // Pinning allocates through the CUDA context of the thread's current device,
  // and a loader thread starts on device 0.
  return [make = std::move(make), index = target.index()](int64_t i) {
    select_gpu(index);
    return pin(make(i));
  };
}

at::Tensor valid_mask(const std::vector<uint8_t>& valid) {
  return torch::tensor(std::vector<int64_t>(valid.begin(), valid.end()), torch::kLong).to(torch::kBool);
}

}  // namespace tandem
