#pragma once
// A ResNet task for the Trainer's multi-rank tests: 16 training and 8
// evaluation samples of one 8x8 channel, channels-last weights, batch norm.
#include <torch/torch.h>

#include "tandem/nn/resnet.h"
#include "tandem/train/task.h"

namespace {

constexpr int64_t kTrain = 16, kEval = 8;

// Sample i: one 8x8 channel whose level and pattern depend on i, so each
// rank's shard has statistics of its own; its class is i's parity.
torch::Tensor images(const std::vector<int64_t>& idx) {
  auto i = torch::tensor(idx, torch::kLong).to(torch::kFloat).view({-1, 1, 1, 1});
  auto grid = torch::arange(64, torch::kFloat).view({1, 1, 8, 8});
  return torch::sin(grid * 0.3 + i) * (1 + i * 0.2) + i * 0.1;
}

class ResNetTask : public tandem::Task {
 public:
  std::shared_ptr<torch::nn::Module> build_model() override {
    tandem::nn::ResNetOptions o;
    o.in_channels = 1;
    o.num_classes = 2;
    o.stem = "small";
    o.channels_last = true;
    return std::make_shared<tandem::nn::ResNetImpl>(o);
  }
  int64_t train_size() const override { return kTrain; }
  int64_t eval_size() const override { return kEval; }
  tandem::Batch make_batch(const std::vector<int64_t>& indices, bool train, uint64_t) override {
    std::vector<int64_t> idx = indices;
    if (!train)
      for (auto& i : idx) i += kTrain;
    return {{"x", images(idx)}, {"y", torch::tensor(idx, torch::kLong) % 2}};
  }
  tandem::Loss loss(torch::nn::Module& model, const tandem::Batch& b) override {
    const at::Tensor each = per_sample(model, b);
    return tandem::Loss::of_mean(each.mean(), each.size(0));
  }
  // Per sample, so that the metric does not depend on how the ranks batch it.
  tandem::EvalRows eval_rows(torch::nn::Module& model, const tandem::Batch& b) override {
    return {{"loss", per_sample(model, b).to(torch::kFloat)}};
  }
  static at::Tensor per_sample(torch::nn::Module& model, const tandem::Batch& b) {
    auto logits = static_cast<tandem::nn::ResNetImpl&>(model).forward(b.at("x"));
    return torch::nn::functional::cross_entropy(
        logits, b.at("y"), torch::nn::functional::CrossEntropyFuncOptions().reduction(torch::kNone));
  }
};

}  // namespace
