#include "tandem/obs/tensor_memory.h"

#include <string>
#include <c10/core/Allocator.h>
#include <c10/core/CPUAllocator.h>
#include <c10/core/impl/alloc_cpu.h>

#if TANDEM_TORCH_HAS_CUDA
#include <c10/cuda/CUDACachingAllocator.h>
#endif

#include <malloc.h>

#include <atomic>
#include <mutex>

namespace tandem {
namespace {

// LibTorch's CPU allocation (c10::alloc_cpu: aligned, huge pages where they
// pay), counted by the block's usable size, which malloc reads back when it
// is freed. The data pointer is its own context, as raw_allocate (oneDNN's
// buffers) requires. LibTorch frees raw allocations through whichever CPU
// allocator is current, so a block allocated before this one was installed
// can come back here: it is freed as the default would free it and only the
// count is off by it, which is why programs install this first (run_program).
class CountingAllocator final : public c10::Allocator {
 public:
  c10::DataPtr allocate(size_t n) override {
    void* data = c10::alloc_cpu(n);
    const auto bytes = static_cast<int64_t>(malloc_usable_size(data));
    const int64_t now = live_.fetch_add(bytes) + bytes;
    for (int64_t peak = peak_.load(); now > peak && !peak_.compare_exchange_weak(peak, now);) {
    }
    return {data, data, &release, c10::Device(c10::kCPU)};
  }

  c10::DeleterFnPtr raw_deleter() const override { return &release; }
  void copy_data(void* dest, const void* src, std::size_t count) const override { default_copy_data(dest, src, count); }

  TensorMemory figures() const { return {live_.load(), peak_.load()}; }
  void reset_peak() { peak_.store(live_.load()); }

 private:
  static void release(void* data) {
    if (data == nullptr) return;
    live_.fetch_sub(static_cast<int64_t>(malloc_usable_size(data)));
    c10::free_cpu(data);
  }

  static std::atomic<int64_t> live_, peak_;
};

std::atomic<int64_t> CountingAllocator::live_{0};
std::atomic<int64_t> CountingAllocator::peak_{0};

// Never destroyed: tensors it counted may outlive every static object.
CountingAllocator* counter = nullptr;
std::once_flag installed;

}  // namespace

void count_cpu_tensors() {
  std::call_once(installed, [] {
    counter = new CountingAllocator();
    // Above the default's priority (0), so that it is the one handed out.
    c10::SetCPUAllocator(counter, /*priority=*/1);
  });
}

TensorMemory tensor_memory(const c10::Device& device) {
#if TANDEM_TORCH_HAS_CUDA
  if (device.is_cuda()) {
    // The allocator starts with the first CUDA tensor; asked before that
    // (the memory plan is), it would refuse the device as unknown.
    if (!c10::cuda::CUDACachingAllocator::get()->initialized()) return {0, 0};
    const auto stats = c10::cuda::CUDACachingAllocator::getDeviceStats(device.index());
    const auto& all = stats.allocated_bytes[static_cast<size_t>(c10::CachingAllocator::StatType::AGGREGATE)];
    return {all.current, all.peak};
  }
#endif
  if (device.is_cpu() && counter != nullptr) return counter->figures();
  return {};
}

void reset_tensor_peak(const c10::Device& device) {
#if TANDEM_TORCH_HAS_CUDA
  if (device.is_cuda()) {
    if (c10::cuda::CUDACachingAllocator::get()->initialized())
      c10::cuda::CUDACachingAllocator::resetPeakStats(device.index());
    return;
  }
#endif
  if (device.is_cpu() && counter != nullptr) counter->reset_peak();
}

void release_cached_memory(const c10::Device& device) {
#if TANDEM_TORCH_HAS_CUDA
  if (device.is_cuda() && c10::cuda::CUDACachingAllocator::get()->initialized())
    c10::cuda::CUDACachingAllocator::emptyCache();
#else
  (void)device;
#endif
}

bool is_out_of_memory(const c10::Error& e) {
  if (dynamic_cast<const c10::OutOfMemoryError*>(&e)) return true;
  const std::string what = e.what_without_backtrace();
  for (const char* sign :
       {"out of memory", "CUBLAS_STATUS_ALLOC_FAILED", "CUDNN_STATUS_ALLOC_FAILED", "not enough memory"})
    if (what.find(sign) != std::string::npos) return true;
  return false;
}

}  // namespace tandem
