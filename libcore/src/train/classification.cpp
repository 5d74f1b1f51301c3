#include "tandem/train/classification.h"

#include <torch/torch.h>

#include "tandem/nn/resnet.h"
#include "tandem/random.h"

namespace tandem {
namespace {

at::Tensor each_cross_entropy(const at::Tensor& logits, const at::Tensor& labels) {
  namespace F = torch::nn::functional;
  return F::cross_entropy(logits, labels, F::CrossEntropyFuncOptions().reduction(torch::kNone));
}

}  // namespace

at::Tensor resnet_logits(torch::nn::Module& model, const at::Tensor& images) {
  return dynamic_cast<nn::ResNetImpl&>(model).forward(images).to(at::kFloat);
}

Loss classification_loss(const at::Tensor& logits, const at::Tensor& labels, const at::Tensor& valid,
                               const at::Tensor& class_weights, double label_smoothing, const MixedTargets& mixed) {
  // Each sample's weighted loss and weight for one label per sample.
  const auto weighed = [&](const at::Tensor& targets) -> std::pair<at::Tensor, at::Tensor> {
    const at::Tensor t = targets.to(logits.device());
    const at::Tensor weight = class_weights.defined()
                                  ? class_weights.to(logits.device(), at::kFloat).index_select(0, t)
                                  : torch::ones({logits.size(0)}, logits.options().dtype(at::kFloat));
    at::Tensor each = each_cross_entropy(logits, t);
    if (label_smoothing > 0)
      each = (1 - label_smoothing) * each - label_smoothing * torch::log_softmax(logits, 1).mean(1);
    return {weight * each, weight};
  };
  auto [loss, weight] = weighed(labels);
  if (mixed.lam.defined()) {
    const at::Tensor lam = mixed.lam.to(logits.device(), at::kFloat);
    const auto [partner_loss, partner_weight] = weighed(mixed.partner_labels);
    loss = lam * loss + (1 - lam) * partner_loss;
    weight = lam * weight + (1 - lam) * partner_weight;
  }
  const at::Tensor counted = valid.to(logits.device(), at::kFloat);
  return {(loss * counted).sum(), (weight * counted).sum()};
}

MixupDraw mixup_draw(uint64_t seed, int64_t sample, int64_t train_size, double alpha) {
  // A stream of its own: augmentation draws from mix_seed(seed, sample) too.
  SplitMix64 rng(mix_seed(mix_seed(seed, static_cast<uint64_t>(sample)), fnv1a64("mixup")));
  MixupDraw d;
  d.partner = static_cast<int64_t>(below(rng, static_cast<uint64_t>(train_size)));
  d.lam = symmetric_beta(rng, alpha);
  return d;
}

EvalRows classification_rows(const at::Tensor& logits, const at::Tensor& labels) {
  return {{"prob", torch::softmax(logits, 1)},
          {"pred", logits.argmax(1)},
          {"label", labels},
          {"loss", each_cross_entropy(logits, labels)}};
}

double classification_accuracy(const EvalRows& rows) {
  return rows.at("pred").eq(rows.at("label")).to(at::kDouble).mean().item<double>();
}

}  // namespace tandem
