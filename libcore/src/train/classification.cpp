#include "tandem/train/classification.h"

#include <torch/torch.h>

#include "tandem/nn/resnet.h"

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

at::Tensor classification_loss(const at::Tensor& logits, const at::Tensor& labels, const at::Tensor& valid,
                               const at::Tensor& class_weights, double label_smoothing) {
  at::Tensor weight = valid.to(logits.device(), at::kFloat);
  if (class_weights.defined()) weight = weight * class_weights.to(logits.device(), at::kFloat).index_select(0, labels);
  at::Tensor each = each_cross_entropy(logits, labels);
  if (label_smoothing > 0)
    each = (1 - label_smoothing) * each - label_smoothing * torch::log_softmax(logits, 1).mean(1);
  return (each * weight).sum() / weight.sum().clamp_min(1e-12);
}

EvalRows classification_rows(const at::Tensor& logits, const at::Tensor& labels) {
  return {{"prob", torch::softmax(logits, 1).cpu()},
          {"pred", logits.argmax(1).cpu()},
          {"label", labels.cpu()},
          {"loss", each_cross_entropy(logits, labels).cpu()}};
}

double classification_accuracy(const EvalRows& rows) {
  return rows.at("pred").eq(rows.at("label")).to(at::kDouble).mean().item<double>();
}

}  // namespace tandem
