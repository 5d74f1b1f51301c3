#include "tandem/train/grad_norm.h"

#include <torch/torch.h>

#include "tandem/dist/shard.h"

namespace tandem {

at::Tensor grad_sum_of_squares(const std::vector<at::Tensor>& grads) {
  if (grads.empty()) return torch::zeros({}, torch::kDouble);
  torch::NoGradGuard no_grad;
  std::vector<at::Tensor> runs;
  for (const auto& g : grads)
    for (auto& run : memory_order(g).split(kNormRun)) runs.push_back(std::move(run));
  return torch::stack(at::_foreach_norm(runs, 2.0, torch::kDouble)).square().sum();
}

}  // namespace tandem
