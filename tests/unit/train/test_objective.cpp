// One objective however the batch is split (task.h, Loss): a loss is a sum
// and its weight, evaluation weighs batches as training does, and the
// class-weighted cross-entropy carotid and vavae's judge train gives the same
// gradients over a global batch cut into micro-batches of any size, where a
// mean within each micro-batch does not.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "../split_objective.h"
#include "tandem/nn/resnet.h"
#include "tandem/train/classification.h"
#include "tandem/train/task.h"

namespace tandem {
namespace {

TEST(TrainObjective, LossOfAMeanAndItsMean) {
  const Loss l = Loss::of_mean(torch::tensor(2.5), 4);
  EXPECT_DOUBLE_EQ(l.sum.item<double>(), 10.0);
  EXPECT_DOUBLE_EQ(l.weight.item<double>(), 4.0);
  EXPECT_DOUBLE_EQ(l.mean().item<double>(), 2.5);
  // A batch of padding only: no weight, and a mean of 0, not NaN.
  EXPECT_EQ((Loss{torch::tensor(0.0), torch::tensor(0.0)}).mean().item<double>(), 0.0);
}

// Each sample's loss sum and weight are in the batch ("s", "w"), so the
// default evaluation can be checked by hand.
class GivenLossTask : public Task {
 public:
  std::shared_ptr<torch::nn::Module> build_model() override { return nullptr; }
  int64_t train_size() const override { return 4; }
  Batch make_batch(const std::vector<int64_t>& indices, bool, uint64_t) override {
    std::vector<double> s, w;
    for (int64_t i : indices) {
      s.push_back(kSums[i]);
      w.push_back(kWeights[i]);
    }
    return {{"s", torch::tensor(s, torch::kDouble)}, {"w", torch::tensor(w, torch::kDouble)}};
  }
  Loss loss(torch::nn::Module&, const Batch& b) override {
    const at::Tensor valid = b.at("valid").to(torch::kDouble);
    return {(b.at("s") * valid).sum(), (b.at("w") * valid).sum()};
  }
  static constexpr double kSums[4] = {1.0, 2.0, 30.0, 0.5};
  static constexpr double kWeights[4] = {1.0, 1.0, 10.0, 2.0};
};

TEST(TrainObjective, DefaultEvaluationWeighsSamplesAsTraining) {
  GivenLossTask task;
  torch::nn::Module none;
  // Batches {0, 1} and {2, 3 (padding)}: the rows share each batch's sum and
  // weight among its valid samples; padding gets nothing.
  const EvalRows first = task.eval_rows(none, make_loop_batch(task, MicroBatch{{0, 1}, {1, 1}, {}}, false, 0));
  const EvalRows second = task.eval_rows(none, make_loop_batch(task, MicroBatch{{2, 3}, {1, 0}, {}}, false, 0));
  EXPECT_TRUE(torch::allclose(first.at("loss_sum"), torch::tensor({1.5, 1.5}, torch::kDouble)));
  EXPECT_TRUE(torch::allclose(second.at("loss_weight"), torch::tensor({10.0, 0.0}, torch::kDouble)));
  // The evaluation loss: (1 + 2 + 30) / (1 + 1 + 10), not the mean of the
  // batches' means (1.5 + 3) / 2.
  const EvalRows rows = {{"loss_sum", torch::cat({first.at("loss_sum"), second.at("loss_sum").narrow(0, 0, 1)})},
                         {"loss_weight", torch::cat({first.at("loss_weight"), second.at("loss_weight").narrow(0, 0, 1)})}};
  EXPECT_NEAR(task.eval_metrics(rows).at("loss"), 33.0 / 12.0, 1e-12);
  // Rows with a loss of each sample's own (vavae's DiT): their mean.
  EXPECT_NEAR(task.eval_metrics({{"loss", torch::tensor({1.0, 2.0, 6.0})}}).at("loss"), 3.0, 1e-12);
}

// carotid's loss on carotid's kind of model: a ResNet, balanced class weights
// (12 samples of class 0 weigh 16 / 24 each, 4 of class 1 weigh 2), the
// class-1 samples all in the first quarter of the batch.
class WeightedImagesTask : public Task {
 public:
  std::shared_ptr<torch::nn::Module> build_model() override {
    nn::ResNetOptions o;
    o.in_channels = 1;
    o.num_classes = 2;
    o.stem = "small";
    return std::make_shared<nn::ResNetImpl>(o);
  }
  int64_t train_size() const override { return 16; }
  Batch make_batch(const std::vector<int64_t>& indices, bool, uint64_t) override {
    const auto i = torch::tensor(indices, torch::kLong).to(torch::kFloat).view({-1, 1, 1, 1});
    const auto grid = torch::arange(64, torch::kFloat).view({1, 1, 8, 8});
    return {{"x", torch::sin(grid * 0.3 + i) * (1 + i * 0.2)},
            {"y", (torch::tensor(indices, torch::kLong) < 4).to(torch::kLong)}};
  }
  Loss loss(torch::nn::Module& model, const Batch& b) override {
    return classification_loss(resnet_logits(model, b.at("x")), b.at("y"), b.at("valid"),
                               torch::tensor({16.0 / 24, 2.0}, torch::kDouble));
  }
};

TEST(TrainObjective, ClassWeightedLossGivesTheSameGradientsHoweverTheBatchIsSplit) {
  torch::manual_seed(0);
  WeightedImagesTask task;
  auto model = task.build_model();
  // Batch-norm statistics are per micro-batch in training, as in DDP without
  // SyncBatchNorm: the objective is compared with the running statistics.
  model->eval();
  std::vector<int64_t> all(16);
  for (int64_t i = 0; i < 16; ++i) all[i] = i;
  const auto whole = testing::split_gradients(task, *model, all, 16);
  for (int64_t micro : {8, 4, 2})
    EXPECT_LT(testing::relative_difference(testing::split_gradients(task, *model, all, micro), whole), 1e-6)
        << "micro-batches of " << micro;
  // A mean within each micro-batch weighs the class-1 quarter as a quarter
  // of the batch, not as its weight's half.
  const double naive = testing::relative_difference(testing::split_gradients(task, *model, all, 4, true), whole);
  EXPECT_GT(naive, 1e-2);
  std::printf("class-weighted ResNet, 4 micro-batches of 4: mean of means off by %.3g relative\n", naive);
}

}  // namespace
}  // namespace tandem
