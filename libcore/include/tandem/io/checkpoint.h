#pragma once
// A checkpoint is one HDF5 file: a group per named tensor set (model/, optim/,
// ema/, rng/), tensors in the order given, and scalar state (step, epoch, loss
// scale, the resolved config text...) as attributes of the root. It opens in
// h5py as f["model"]["fc.weight"] and f.attrs["step"].
#include <ATen/core/Tensor.h>

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <memory>

#include "tandem/io/attr_value.h"
#include "tandem/io/tensor_source.h"
#include "tandem/named_tensors.h"

namespace torch::nn {
class Module;
}  // namespace torch::nn

namespace tandem {

using TensorSets = std::map<std::string, NamedTensors>;
using CheckpointState = std::map<std::string, AttrValue>;

// Copies out of anything iterated as items with key() and value(), such as
// module->named_parameters() and named_buffers(). The tensors are shared.
template <class Items>
NamedTensors named_tensors(const Items& items) {
  NamedTensors out;
  for (const auto& item : items) out.emplace_back(item.key(), item.value());
  return out;
}

class H5File;

struct Checkpoint {
  std::string path;
  TensorSets sets;  // load_checkpoint: every set, in memory
  CheckpointState state;
  // open_checkpoint: the sets stay in the file, read a tensor at a time.
  std::shared_ptr<const H5File> file;

  bool has_set(const std::string& name) const;
  // A set's tensors, from memory or from the file, whichever holds them.
  // Throws a UsageError naming the file when the set is missing.
  std::unique_ptr<TensorSource> source(const std::string& name) const;

  // Each throws a UsageError naming the file when the set or key is missing or
  // holds another kind of value; set() needs a loaded checkpoint (an opened
  // one is read through source()).
  const NamedTensors& set(const std::string& name) const;
  int64_t get_int(const std::string& key) const;
  double get_double(const std::string& key) const;  // an int64 is accepted
  std::string get_string(const std::string& key) const;
};

// Parameters, then buffers, under the module's names: what a checkpoint's
// "model" set holds, and what restore() copies into. The tensors are shared.
NamedTensors module_state(const torch::nn::Module& module);

// Parameters that require gradients, then buffers: module_state without the
// frozen parameters, which never change and which a task that rebuilds them
// from elsewhere (LoRA's base, Task::frozen_base) leaves out of its files.
NamedTensors trained_state(const torch::nn::Module& module);

// A file of what was trained on a frozen base (Task::frozen_base) continues,
// and is evaluated, only on the base it was trained on: on another, adapters
// would start from a point they never reached. Throws UsageError, naming the
// file and both bases, unless its state "frozen_base" is `frozen_base`;
// empty stands for a whole model, and a file without the state holds one.
void require_frozen_base(const Checkpoint& checkpoint, const std::string& frozen_base);

// Written through replace_atomically (io/atomic_file.h): a crash at any point
// leaves the previous file at `path` whole, and at worst a temporary file
// named by temp_path_for(path) beside it. Set and tensor names must be
// non-empty and free of '/'.
void save_checkpoint(const std::string& path, const TensorSets& sets, const CheckpointState& state);

Checkpoint load_checkpoint(const std::string& path);
// The checkpoint's state, with its sets left in the file (Checkpoint::source
// reads them when asked): what resuming opens, so that no rank holds a whole
// checkpoint in memory. The file has been read whole once by then, in
// another process (io/h5_guard.h), or else here a tensor at a time, so a
// damaged one is refused here as load_checkpoint refuses it.
Checkpoint open_checkpoint(const std::string& path);

// Copies the checkpoint's set into `targets` (e.g. a model's parameters) without
// recording gradients, converting dtype and device as needed, a tensor at a
// time. Names and shapes are checked first: on any difference nothing is
// copied and a UsageError lists the missing, unexpected and reshaped tensors.
// `read_elsewhere`: tensors the set must also hold, shaped as these, which
// another reader takes (AdamW::load_masters: the sharded masters' slices).
void restore(const Checkpoint& checkpoint, const std::string& set, const NamedTensors& targets,
             const NamedTensors& read_elsewhere = {});

}  // namespace tandem
