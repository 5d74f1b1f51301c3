// The classifier's loss (plain, weighted, smoothed and mixed) and evaluation
// rows against numbers worked by hand.
// Two samples, three classes, logits chosen so the softmax is exact:
//   sample 0: logits ln[3, 1, 1] -> p = [3/5, 1/5, 1/5], label 2: ce = ln 5, predicted 0 (wrong)
//   sample 1: logits ln[1, 2, 1] -> p = [1/4, 1/2, 1/4], label 1: ce = ln 2, predicted 1 (right)
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>
#include <vector>

#include "tandem/nn/resnet.h"
#include "tandem/train/classification.h"

namespace tandem {
namespace {

at::Tensor two_logits() { return torch::tensor({3.0, 1.0, 1.0, 1.0, 2.0, 1.0}, torch::kFloat).view({2, 3}).log(); }
at::Tensor two_labels() { return torch::tensor({2, 1}, torch::kLong); }
at::Tensor both_valid() { return torch::tensor({true, true}); }

TEST(ClassifierLoss, IsTheMeanCrossEntropy) {
  const double loss = classification_loss(two_logits(), two_labels(), both_valid()).mean().item<double>();
  EXPECT_NEAR(loss, (std::log(5.0) + std::log(2.0)) / 2, 1e-6);
}

TEST(ClassifierLoss, WeighsEachSampleByItsClass) {
  // Weights 1, 2, 3 for classes 0, 1, 2: (3 ln 5 + 2 ln 2) / (3 + 2).
  const at::Tensor weights = torch::tensor({1.0, 2.0, 3.0}, torch::kDouble);
  const double loss = classification_loss(two_logits(), two_labels(), both_valid(), weights).mean().item<double>();
  EXPECT_NEAR(loss, (3 * std::log(5.0) + 2 * std::log(2.0)) / 5, 1e-6);
  // As a sum and its weight, which add up over micro-batches.
  const Loss parts = classification_loss(two_logits(), two_labels(), both_valid(), weights);
  EXPECT_NEAR(parts.sum.item<double>(), 3 * std::log(5.0) + 2 * std::log(2.0), 1e-6);
  EXPECT_NEAR(parts.weight.item<double>(), 5.0, 1e-6);
  // The mean torch's own weighted cross-entropy takes.
  namespace F = torch::nn::functional;
  const double torch_loss =
      F::cross_entropy(two_logits(), two_labels(), F::CrossEntropyFuncOptions().weight(weights.to(torch::kFloat)))
          .item<double>();
  EXPECT_NEAR(loss, torch_loss, 1e-6);
}

TEST(ClassifierLoss, SmoothsLabelsAsTorchDoes) {
  // Sample 0: 0.9 ln 5 + 0.1 (ln 5/3 + ln 5 + ln 5) / 3; sample 1 alike.
  const double s0 = 0.9 * std::log(5.0) + 0.1 * (std::log(5.0 / 3) + 2 * std::log(5.0)) / 3;
  const double s1 = 0.9 * std::log(2.0) + 0.1 * (std::log(4.0) + std::log(2.0) + std::log(4.0)) / 3;
  const double loss = classification_loss(two_logits(), two_labels(), both_valid(), {}, 0.1).mean().item<double>();
  EXPECT_NEAR(loss, (s0 + s1) / 2, 1e-6);
  namespace F = torch::nn::functional;
  const double torch_loss =
      F::cross_entropy(two_logits(), two_labels(), F::CrossEntropyFuncOptions().label_smoothing(0.1)).item<double>();
  EXPECT_NEAR(loss, torch_loss, 1e-6);
}

TEST(ClassifierLoss, LeavesOutPadding) {
  const at::Tensor first_only = torch::tensor({true, false});
  EXPECT_NEAR(classification_loss(two_logits(), two_labels(), first_only).mean().item<double>(), std::log(5.0), 1e-6);
  // A batch of padding only (the epoch's last, filled-up batch on some rank).
  const at::Tensor none = torch::tensor({false, false});
  EXPECT_EQ(classification_loss(two_logits(), two_labels(), none).mean().item<double>(), 0.0);
}

// Mixup: sample 0 is 3/4 itself (label 2) and 1/4 a class-0 image, sample 1
// half itself (label 1) and half class 0. ce against class 0: ln 5/3 and ln 4.
MixedTargets two_mixed() { return {torch::tensor({0, 0}, torch::kLong), torch::tensor({0.75, 0.5}, torch::kFloat)}; }

TEST(ClassifierLoss, MixedTargetsTakeBothLabelsByShare) {
  const double s0 = 0.75 * std::log(5.0) + 0.25 * std::log(5.0 / 3);
  const double s1 = 0.5 * std::log(2.0) + 0.5 * std::log(4.0);
  const double loss = classification_loss(two_logits(), two_labels(), both_valid(), {}, 0, two_mixed()).mean().item<double>();
  EXPECT_NEAR(loss, (s0 + s1) / 2, 1e-6);
  // torch's cross-entropy against the mixed probability targets, with and
  // without smoothing (which torch applies to the mixed target).
  namespace F = torch::nn::functional;
  const at::Tensor targets = torch::tensor({0.25, 0.0, 0.75, 0.5, 0.5, 0.0}, torch::kFloat).view({2, 3});
  EXPECT_NEAR(loss, F::cross_entropy(two_logits(), targets).item<double>(), 1e-6);
  const double smoothed =
      classification_loss(two_logits(), two_labels(), both_valid(), {}, 0.1, two_mixed()).mean().item<double>();
  EXPECT_NEAR(smoothed,
              F::cross_entropy(two_logits(), targets, F::CrossEntropyFuncOptions().label_smoothing(0.1)).item<double>(),
              1e-6);
}

TEST(ClassifierLoss, MixedTargetsWeighBothLabels) {
  // Weights 1, 2, 3: sample 0 weighs 0.75 * 3 + 0.25 * 1 = 2.5 and adds
  // 0.75 * 3 ln 5 + 0.25 * 1 ln 5/3; sample 1 weighs 0.5 * 2 + 0.5 * 1 = 1.5
  // and adds 0.5 * 2 ln 2 + 0.5 * 1 ln 4.
  const at::Tensor weights = torch::tensor({1.0, 2.0, 3.0}, torch::kDouble);
  const double sum = 2.25 * std::log(5.0) + 0.25 * std::log(5.0 / 3) + std::log(2.0) + 0.5 * std::log(4.0);
  const double loss =
      classification_loss(two_logits(), two_labels(), both_valid(), weights, 0, two_mixed()).mean().item<double>();
  EXPECT_NEAR(loss, sum / 4.0, 1e-6);
  // Padding still counts for nothing; a share of 1 is the plain loss.
  const at::Tensor first_only = torch::tensor({true, false});
  EXPECT_NEAR(classification_loss(two_logits(), two_labels(), first_only, weights, 0, two_mixed()).mean().item<double>(),
              (2.25 * std::log(5.0) + 0.25 * std::log(5.0 / 3)) / 2.5, 1e-6);
  const MixedTargets whole = {torch::tensor({0, 0}, torch::kLong), torch::ones({2})};
  EXPECT_NEAR(classification_loss(two_logits(), two_labels(), both_valid(), weights, 0, whole).mean().item<double>(),
              classification_loss(two_logits(), two_labels(), both_valid(), weights).mean().item<double>(), 1e-7);
}

TEST(MixupDraw, DependsOnTheEpochAndTheSampleOnly) {
  const MixupDraw a = mixup_draw(5, 17, 100, 0.4), b = mixup_draw(5, 17, 100, 0.4);
  EXPECT_EQ(a.partner, b.partner);
  EXPECT_EQ(a.lam, b.lam);
  // Over samples and epochs: every partner reachable, shares spread over
  // [0, 1] with Beta(1, 1)'s mean, and another epoch draws anew.
  std::vector<int> hits(10, 0);
  double sum = 0;
  int moved = 0;
  for (int64_t sample = 0; sample < 2000; ++sample) {
    const MixupDraw d = mixup_draw(9, sample, 10, 1.0);
    ASSERT_GE(d.partner, 0);
    ASSERT_LT(d.partner, 10);
    ASSERT_TRUE(d.lam >= 0 && d.lam <= 1);
    ++hits[d.partner];
    sum += d.lam;
    moved += mixup_draw(10, sample, 10, 1.0).lam != d.lam;
  }
  for (int h : hits) EXPECT_NEAR(h, 200, 60);
  EXPECT_NEAR(sum / 2000, 0.5, 0.03);
  EXPECT_EQ(moved, 2000);
}

TEST(ClassifierRows, HoldProbabilitiesPredictionsLabelsAndLosses) {
  const EvalRows rows = classification_rows(two_logits(), two_labels());
  EXPECT_TRUE(torch::allclose(rows.at("prob"), torch::tensor({0.6, 0.2, 0.2, 0.25, 0.5, 0.25}).view({2, 3}), 0, 1e-6));
  EXPECT_TRUE(torch::equal(rows.at("pred"), torch::tensor({0, 1}, torch::kLong)));
  EXPECT_TRUE(torch::equal(rows.at("label"), two_labels()));
  EXPECT_TRUE(
      torch::allclose(rows.at("loss"), torch::tensor({std::log(5.0), std::log(2.0)}).to(torch::kFloat), 0, 1e-6));
  EXPECT_EQ(classification_accuracy(rows), 0.5);
}

TEST(ClassifierRows, AccuracyCountsPredictionsEqualToLabels) {
  EvalRows rows = {{"pred", torch::tensor({0, 1, 2, 2}, torch::kLong)},
                   {"label", torch::tensor({0, 1, 2, 0}, torch::kLong)}};
  EXPECT_EQ(classification_accuracy(rows), 0.75);
}

TEST(ResNetLogits, AreFloatLogitsPerClass) {
  torch::manual_seed(0);
  nn::ResNetOptions options;
  options.num_classes = 3;
  options.stem = "small";
  nn::ResNet model(options);
  model->eval();
  const at::Tensor images = torch::randn({2, 3, 8, 8}).to(torch::kDouble);
  model->to(torch::kDouble);
  const at::Tensor logits = resnet_logits(*model, images);
  EXPECT_EQ(logits.scalar_type(), torch::kFloat);
  EXPECT_EQ(logits.sizes().vec(), (std::vector<int64_t>{2, 3}));
  EXPECT_TRUE(torch::allclose(logits, model->forward(images).to(torch::kFloat)));
}

}  // namespace
}  // namespace tandem
