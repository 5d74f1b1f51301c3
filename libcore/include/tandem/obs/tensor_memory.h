#pragma once
// How many bytes a process's tensors hold on a device, and their peak: what a
// memory plan is held to. On a GPU these are the caching allocator's own
// statistics (torch.cuda.memory_allocated and max_memory_allocated). On the
// CPU LibTorch keeps none, so count_cpu_tensors() installs a counting CPU
// allocator, which every CPU tensor's storage and oneDNN's buffers come
// from (not memory LibTorch takes from malloc itself), each block counted by
// the usable size malloc gives it.
#include <c10/core/Device.h>
#include <c10/util/Exception.h>

#include <cstdint>

namespace tandem {

struct TensorMemory {
  int64_t live = -1, peak = -1;  // bytes; -1 where nothing counts them
};

// Starts counting CPU tensors' bytes, once per process: later calls do
// nothing. Call it first (run_program does): tensors allocated before it are
// not counted, and a raw block of oneDNN's allocated before and freed after
// lowers the count by its size.
void count_cpu_tensors();

// The device's figures: on the CPU -1 before count_cpu_tensors().
TensorMemory tensor_memory(const c10::Device& device);
// Lowers the device's peak to what is live now, to measure a stretch of work.
void reset_tensor_peak(const c10::Device& device);
// Gives the caching allocator's unused blocks back to the GPU
// (torch.cuda.empty_cache), so that a step retried after running out of
// memory starts from unfragmented memory; nothing on the CPU.
void release_cached_memory(const c10::Device& device);

// Whether `e` is running out of device memory: the caching allocator's
// OutOfMemoryError; a raw CUDA allocation's "out of memory"
// (cudaErrorMemoryAllocation); cuBLAS's and cuDNN's failing workspaces; the
// CPU allocator's "not enough memory". accelerate's should_reduce_batch_size
// reads the same messages.
bool is_out_of_memory(const c10::Error& e);

}  // namespace tandem
