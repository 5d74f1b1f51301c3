#include "tandem/train/batch_norm_stats.h"

#include <torch/torch.h>

#include <optional>
#include <vector>

#include "tandem/dist/communicator.h"

namespace tandem {
namespace {

// One layer's statistics and the momentum it had, whatever its dimension.
struct Layer {
  at::Tensor mean, var;
  std::optional<double>* momentum;
  std::optional<double> saved;
  std::function<void()> reset;
};

template <class Impl>
bool take(torch::nn::Module& m, std::vector<Layer>& out) {
  auto* bn = dynamic_cast<Impl*>(&m);
  if (bn == nullptr || !bn->options.track_running_stats()) return bn != nullptr;
  out.push_back({bn->running_mean, bn->running_var, &bn->options.momentum(), bn->options.momentum(),
                 [bn] { bn->reset_running_stats(); }});
  return true;
}

// Puts the layers' momentum back however the forward passes end.
struct MomentumBack {
  std::vector<Layer>& layers;
  ~MomentumBack() {
    for (auto& l : layers) *l.momentum = l.saved;
  }
};

}  // namespace

int64_t recompute_batch_norm_stats(torch::nn::Module& model, int64_t batches,
                                   const std::function<void(int64_t)>& forward, Communicator* comm) {
  std::vector<Layer> layers;
  auto visit = [&layers](torch::nn::Module& m) {
    take<torch::nn::BatchNorm1dImpl>(m, layers) || take<torch::nn::BatchNorm2dImpl>(m, layers) ||
        take<torch::nn::BatchNorm3dImpl>(m, layers);
  };
  // Not modules(): it asks for the model's own shared_ptr, which a module
  // built on the stack has not.
  visit(model);
  for (const auto& m : model.modules(/*include_self=*/false)) visit(*m);
  if (layers.empty()) return 0;
  const bool was_training = model.is_training();
  {
    MomentumBack back{layers};
    torch::NoGradGuard no_grad;
    for (auto& l : layers) l.reset();
    model.train(true);
    for (int64_t i = 0; i < batches; ++i) {
      // A momentum of 1/(i+1) for batch i makes the running statistics the
      // mean over every batch since the reset, not a decaying average that
      // forgets the first. It is what an unset momentum gives, bitwise, but
      // set here on the host: with it unset, LibTorch's BatchNorm reads
      // num_batches_tracked.item() in every layer's forward, a wait for the
      // device per layer per batch.
      for (auto& l : layers) *l.momentum = 1.0 / static_cast<double>(i + 1);
      forward(i);
    }
  }
  model.train(was_training);
  if (comm != nullptr && comm->size() > 1) {
    // Pooled over the ranks' equal shares: the mean of the means, and the
    // mean second moment less the pooled mean's square, so that differences
    // between the ranks' means count as variance too.
    torch::NoGradGuard no_grad;
    for (auto& l : layers) {
      at::Tensor second = l.var + l.mean * l.mean;
      comm->allreduce(l.mean, ReduceOp::Avg);
      comm->allreduce(second, ReduceOp::Avg);
      l.var.copy_(second - l.mean * l.mean);
    }
  }
  return static_cast<int64_t>(layers.size());
}

}  // namespace tandem
