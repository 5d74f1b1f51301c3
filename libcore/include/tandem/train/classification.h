#pragma once
// The part of a classifier's Task that does not depend on its data: from the
// logits of libcore's ResNet to the cross-entropy it learns from, and to the
// per-sample rows evaluation gathers. apps/carotid (images of persons) and
// apps/vavae (the judge of generated images) both build on it; each still
// makes its own batches and metrics.
#include <ATen/core/Tensor.h>

#include <cstdint>

#include "tandem/train/task.h"

namespace torch::nn {
class Module;
}

namespace tandem {

// The logits [N, K] of `model`, a tandem::nn::ResNet, for `images`, as
// float32: under autocast the model may compute in fp16 or bf16, and softmax
// and cross-entropy want the full precision.
at::Tensor resnet_logits(torch::nn::Module& model, const at::Tensor& images);

// Cross-entropy over the samples `valid` marks (padding is not), each
// weighted by its label's entry of `class_weights` [K] where that is defined:
// the sum sum_i w_i * ce_i and the weight sum_i w_i, whose ratio is the mean
// torch's cross_entropy(weight=...) takes. A batch of padding only has weight
// 0 (and mean() 0, not NaN).
// label_smoothing e makes each ce_i (1 - e) ce_i + e mean_k(-log p_ik), the
// target (1 - e) one-hot + e / K of torch's cross_entropy(label_smoothing=e):
// a model on a few hundred persons is kept from driving its training
// probabilities to 0 and 1.
//
// With `mixed` (mixup, Zhang et al. 2018), sample i's image is lam_i of its
// own and 1 - lam_i of a partner's, and so is its target: its loss is
// lam_i ce(label_i) + (1 - lam_i) ce(partner_i) and its weight
// lam_i w(label_i) + (1 - lam_i) w(partner_i). lam 1 is the plain loss.
struct MixedTargets {
  at::Tensor partner_labels;  // [N] long
  at::Tensor lam;             // [N], each sample's own share
};
Loss classification_loss(const at::Tensor& logits, const at::Tensor& labels, const at::Tensor& valid,
                               const at::Tensor& class_weights = {}, double label_smoothing = 0,
                               const MixedTargets& mixed = {});

// Mixup's draw for one training sample: a partner in [0, train_size) and
// the sample's own share lam ~ Beta(alpha, alpha). It depends on the epoch's
// seed and the sample's index only, so a sample is mixed alike on any number
// of ranks and in any batch. alpha > 0, train_size > 0.
struct MixupDraw {
  int64_t partner = 0;
  double lam = 1;
};
MixupDraw mixup_draw(uint64_t seed, int64_t sample, int64_t train_size, double alpha);

// Per-sample rows, on the logits' device: "prob" [N, K] (softmax), "pred" [N] (argmax),
// "label" [N] and "loss" [N], the unweighted cross-entropy, so the mean of
// the rows is the plain evaluation loss whatever weights training used.
EvalRows classification_rows(const at::Tensor& logits, const at::Tensor& labels);

// The fraction of rows whose "pred" equals their "label"; NaN for no rows.
double classification_accuracy(const EvalRows& rows);

}  // namespace tandem
