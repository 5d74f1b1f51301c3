#pragma once
// Tensors with their names, in a chosen order (a module's parameters, an
// optimizer's state): what checkpoints store, optimizers and gradient
// buckets walk, and EMA copies.
#include <ATen/core/Tensor.h>

#include <string>
#include <utility>
#include <vector>

namespace tandem {

using NamedTensors = std::vector<std::pair<std::string, at::Tensor>>;

}  // namespace tandem
