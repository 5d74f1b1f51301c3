#pragma once
// The objective a Task trains, computed directly over a global batch cut into
// micro-batches, for tests that hold the Trainer and each app to "one
// objective however the batch is split" (task.h, Loss).
#include <torch/torch.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "tandem/train/task.h"

namespace tandem::testing {

// The gradients (one per trainable parameter, in registration order) of
// `task`'s objective over `indices`, all valid, cut into micro-batches of
// `micro` samples: the micro-batches' loss sums over their weights summed,
// as the Trainer takes them. With `mean_of_means`, each micro-batch's mean
// averaged instead: the objective of a per-micro-batch mean, which depends on
// the split. The model's mode (train or eval) is the caller's.
inline std::vector<at::Tensor> split_gradients(Task& task, torch::nn::Module& model,
                                               const std::vector<int64_t>& indices, int64_t micro,
                                               bool mean_of_means = false, uint64_t seed = 0) {
  for (auto& p : model.parameters()) p.mutable_grad() = at::Tensor();
  const auto n = static_cast<int64_t>(indices.size());
  const int64_t pieces = (n + micro - 1) / micro;
  double weight = 0;
  for (int64_t begin = 0; begin < n; begin += micro) {
    const std::vector<int64_t> part(indices.begin() + begin, indices.begin() + std::min(n, begin + micro));
    const Loss loss =
        task.loss(model, make_loop_batch(task, MicroBatch{part, std::vector<uint8_t>(part.size(), 1), {}}, true, seed));
    weight += loss.weight.item<double>();
    (mean_of_means ? loss.mean() / static_cast<double>(pieces) : loss.sum).backward();
  }
  std::vector<at::Tensor> grads;
  for (auto& p : model.parameters()) {
    if (!p.requires_grad()) continue;
    const at::Tensor g = p.grad().defined() ? p.grad().clone() : torch::zeros_like(p);
    grads.push_back(mean_of_means ? g : g / weight);
  }
  return grads;
}

// max |a - b| over all tensors, relative to max |b|.
inline double relative_difference(const std::vector<at::Tensor>& a, const std::vector<at::Tensor>& b) {
  double diff = 0, scale = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    diff = std::max(diff, (a[i].to(torch::kDouble) - b[i].to(torch::kDouble)).abs().max().item<double>());
    scale = std::max(scale, b[i].to(torch::kDouble).abs().max().item<double>());
  }
  return diff / scale;
}

}  // namespace tandem::testing
