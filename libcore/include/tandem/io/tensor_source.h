#pragma once
// Tensors by name, read when asked: a set of a checkpoint on disk (a tensor,
// or a run of its rows, at a time) or tensors already in memory. Resuming
// reads through it, so that a rank holds one tensor of a checkpoint at a
// time, and of a sharded optimizer's moments only the rows of its runs
// (torch.distributed.checkpoint's load plans read likewise only the chunks a
// rank's shards overlap).
#include <ATen/core/Tensor.h>

#include <cstdint>
#include <string>
#include <vector>

#include "tandem/named_tensors.h"

namespace tandem {

class TensorSource {
 public:
  virtual ~TensorSource() = default;
  // In stored order.
  virtual std::vector<std::string> names() const = 0;
  virtual std::vector<int64_t> shape(const std::string& name) const = 0;
  virtual at::Tensor read(const std::string& name) const = 0;
  // Rows [begin, end) along dim 0 of a tensor of one or more dimensions.
  virtual at::Tensor read_rows(const std::string& name, int64_t begin, int64_t end) const = 0;
};

// Tensors in memory (the handles copied, the data shared): what tests and
// callers holding a whole set pass.
class MemorySource : public TensorSource {
 public:
  explicit MemorySource(NamedTensors tensors);
  std::vector<std::string> names() const override;
  std::vector<int64_t> shape(const std::string& name) const override;
  at::Tensor read(const std::string& name) const override;
  at::Tensor read_rows(const std::string& name, int64_t begin, int64_t end) const override;

 private:
  NamedTensors tensors_;
};

}  // namespace tandem
