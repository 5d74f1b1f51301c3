#include "tandem/train/batch_norm_stats.h"

#include <torch/torch.h>

#include <map>
#include <optional>
#include <vector>

#include "tandem/dist/communicator.h"

namespace tandem {
namespace {

// One layer's statistics and the momentum it had, whatever its dimension.
struct Layer {
  RunningStats stats;
  std::optional<double>* momentum;
  std::optional<double> saved;
  std::function<void()> reset;
};

template <class Impl>
bool take(const std::string& name, torch::nn::Module& m, std::vector<Layer>& out) {
  auto* bn = dynamic_cast<Impl*>(&m);
  if (bn == nullptr || !bn->options.track_running_stats()) return bn != nullptr;
  out.push_back({{name, bn->running_mean, bn->running_var},
                 &bn->options.momentum(),
                 bn->options.momentum(),
                 [bn] { bn->reset_running_stats(); }});
  return true;
}

std::vector<Layer> layers_of(torch::nn::Module& model) {
  std::vector<Layer> layers;
  auto visit = [&layers](const std::string& name, torch::nn::Module& m) {
    take<torch::nn::BatchNorm1dImpl>(name, m, layers) || take<torch::nn::BatchNorm2dImpl>(name, m, layers) ||
        take<torch::nn::BatchNorm3dImpl>(name, m, layers);
  };
  // Not named_modules(include_self): it asks for the model's own shared_ptr,
  // which a module built on the stack has not.
  visit("", model);
  for (const auto& m : model.named_modules("", /*include_self=*/false)) visit(m.key(), *m.value());
  return layers;
}

// Puts the layers' momentum back however the forward passes end.
struct MomentumBack {
  std::vector<Layer>& layers;
  ~MomentumBack() {
    for (auto& l : layers) *l.momentum = l.saved;
  }
};

}  // namespace

std::vector<RunningStats> batch_norm_running_stats(torch::nn::Module& model) {
  std::vector<RunningStats> out;
  for (auto& l : layers_of(model)) out.push_back(l.stats);
  return out;
}

void pool_running_stats(const std::vector<RunningStats>& stats, Communicator& comm) {
  if (stats.empty() || comm.size() == 1) return;
  torch::NoGradGuard no_grad;
  const double n = comm.size();
  std::vector<at::Tensor> means, vars;
  for (const auto& s : stats) {
    means.push_back(s.mean.to(torch::kDouble).reshape({-1}));
    vars.push_back(s.var.to(torch::kDouble).reshape({-1}));
  }
  std::vector<at::Tensor> both(means);
  both.insert(both.end(), vars.begin(), vars.end());
  auto sums = torch::cat(both);
  comm.allreduce(sums, ReduceOp::Sum);
  sums.div_(n);
  const auto pooled_means = sums.narrow(0, 0, sums.numel() / 2);
  const auto pooled_vars = sums.narrow(0, sums.numel() / 2, sums.numel() / 2);
  auto spread = (torch::cat(means) - pooled_means).square_();
  comm.allreduce(spread, ReduceOp::Sum);
  spread.div_(n);
  int64_t at = 0;
  for (const auto& s : stats) {
    const int64_t k = s.mean.numel();
    s.mean.copy_(pooled_means.narrow(0, at, k).view_as(s.mean));
    s.var.copy_((pooled_vars.narrow(0, at, k) + spread.narrow(0, at, k)).view_as(s.var));
    at += k;
  }
}

void pool_batch_norm_buffers(torch::nn::Module& model, const NamedTensors& copies, Communicator& comm) {
  std::vector<RunningStats> stats = batch_norm_running_stats(model);
  std::map<std::string, at::Tensor> named(copies.begin(), copies.end());
  const size_t layers = stats.size();
  for (size_t i = 0; i < layers; ++i) {
    const std::string prefix = stats[i].layer.empty() ? "" : stats[i].layer + ".";
    const auto mean = named.find(prefix + "running_mean");
    const auto var = named.find(prefix + "running_var");
    if (mean != named.end() && var != named.end()) stats.push_back({stats[i].layer, mean->second, var->second});
  }
  pool_running_stats(stats, comm);
}

int64_t recompute_batch_norm_stats(torch::nn::Module& model, int64_t batches,
                                   const std::function<void(int64_t)>& forward, Communicator* comm) {
  std::vector<Layer> layers = layers_of(model);
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
  if (comm != nullptr) {
    std::vector<RunningStats> stats;
    for (const auto& l : layers) stats.push_back(l.stats);
    pool_running_stats(stats, *comm);
  }
  return static_cast<int64_t>(layers.size());
}

}  // namespace tandem
