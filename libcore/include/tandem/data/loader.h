#pragma once
// Batches from host to accelerator: a Prefetcher of named tensors whose thread
// also pins them, so the copy to a GPU can run asynchronously from page-locked
// memory without the training thread paying for the pinning.
#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>
#include <c10/core/Stream.h>

#include <exception>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tandem/data/prefetcher.h"

namespace tandem {

using Batch = std::map<std::string, at::Tensor>;
using Loader = Prefetcher<Batch>;

// The bool mask a batch carries as batch["valid"]: false marks padding.
at::Tensor valid_mask(const std::vector<uint8_t>& valid);

// Host tensors moved to page-locked memory (needs a CUDA build at run time);
// tensors already pinned or on a device are kept as they are.
Batch pin(const Batch& batch);

// The batch on `device`. For CUDA the copy is non-blocking, ordered on the
// current stream, from pinned memory (pinned here if the producer did not).
// Tensors already on `device`, as a CPU batch usually is, are returned as is.
Batch to_device(const Batch& batch, const c10::Device& device);

// What a Loader should run for batches bound for `target`: `make` followed by
// pin() when the target is CUDA, `make` alone otherwise.
Loader::Make pinned_for(Loader::Make make, const c10::Device& target);

// A Loader's batches on `device`, the copy of each started one batch ahead.
// On a GPU the copies run on a stream of their own, so a batch travels while
// the one before it computes: next() makes the caller's current stream wait
// for the batch's copy (an event, not the host), and marks its tensors as in
// use on that stream (record_stream), so the caching allocator does not hand
// their memory to the next copy while the computation still reads it. This is
// the prefetcher of NVIDIA's apex examples (data_prefetcher) and what
// PyTorch's DataLoader with pin_memory leaves to the user. On the CPU the
// batches are the Loader's own.
class DeviceFeed {
 public:
  DeviceFeed(Loader& loader, c10::Device device);
  ~DeviceFeed();
  DeviceFeed(const DeviceFeed&) = delete;
  DeviceFeed& operator=(const DeviceFeed&) = delete;

  struct Item {
    Batch host;    // for counting (tokens, FLOPs) without asking the device
    Batch device;  // ready for the caller's current stream
  };
  // The next batch; rethrows what making it threw; throws std::logic_error
  // after the Loader's last.
  Item next();

 private:
  struct InFlight;
  void start();
  Loader& loader_;
  c10::Device device_;
  std::unique_ptr<InFlight> ahead_;
  // Making the batch ahead threw: kept for the next() that asks for it, so
  // that the batch before it still trains.
  std::exception_ptr failed_;
  std::optional<c10::Stream> copies_;  // the copy stream, on a GPU
};

}  // namespace tandem
