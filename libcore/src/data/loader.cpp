#include "tandem/data/loader.h"

#include <torch/torch.h>

#include <optional>
#include <stdexcept>
#include <utility>

#include "tandem/dist/cuda_info.h"

#if TANDEM_TORCH_HAS_CUDA
#include <ATen/cuda/CUDAEvent.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#endif

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

struct DeviceFeed::InFlight {
  Batch host, device;
#if TANDEM_TORCH_HAS_CUDA
  std::optional<at::cuda::CUDAEvent> copied;  // on the copy stream, after the batch's copies
#endif
};

DeviceFeed::DeviceFeed(Loader& loader, c10::Device device) : loader_(loader), device_(device) {
#if TANDEM_TORCH_HAS_CUDA
  // One stream for every copy: the caching allocator reuses a freed block
  // only on the stream that allocated it, so copies spread over the pool's
  // streams would each keep batches' worth of memory reserved.
  if (device_.is_cuda()) copies_ = c10::cuda::getStreamFromPool(/*isHighPriority=*/false, device_.index()).unwrap();
#endif
  start();
}

DeviceFeed::~DeviceFeed() = default;

void DeviceFeed::start() {
  std::optional<Batch> host;
  try {
    host = loader_.next();
  } catch (...) {
    failed_ = std::current_exception();
  }
  if (!host) {
    ahead_.reset();
    return;
  }
  ahead_ = std::make_unique<InFlight>();
  ahead_->host = std::move(*host);
#if TANDEM_TORCH_HAS_CUDA
  if (copies_) {
    const c10::cuda::CUDAStream copies(*copies_);
    c10::cuda::CUDAStreamGuard on_copies(copies);
    ahead_->device = to_device(ahead_->host, device_);
    ahead_->copied.emplace();
    ahead_->copied->record(copies);
    return;
  }
#endif
  ahead_->device = to_device(ahead_->host, device_);
}

DeviceFeed::Item DeviceFeed::next() {
  if (!ahead_) {
    if (failed_) std::rethrow_exception(failed_);
    throw std::logic_error("DeviceFeed::next() after the loader's last batch");
  }
  std::unique_ptr<InFlight> now = std::move(ahead_);
#if TANDEM_TORCH_HAS_CUDA
  if (now->copied) {
    const c10::cuda::CUDAStream compute = c10::cuda::getCurrentCUDAStream(device_.index());
    now->copied->block(compute);
    for (auto& [name, tensor] : now->device)
      if (tensor.defined() && tensor.is_cuda()) tensor.record_stream(compute.unwrap());
  }
#endif
  // Started before the caller computes on this one: that is the overlap.
  start();
  return {std::move(now->host), std::move(now->device)};
}

at::Tensor valid_mask(const std::vector<uint8_t>& valid) {
  return torch::tensor(std::vector<int64_t>(valid.begin(), valid.end()), torch::kLong).to(torch::kBool);
}

}  // namespace tandem
