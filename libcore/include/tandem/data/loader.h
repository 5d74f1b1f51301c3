#pragma once
// Batches from host to accelerator: a Prefetcher of named tensors whose thread
// also pins them, so the copy to a GPU can run asynchronously from page-locked
// memory without the training thread paying for the pinning.
#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>

#include <map>
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

}  // namespace tandem
