// CarotidTask's own numbers: class weights for the loss, and the person-level
// and multi-class metrics it reports from evaluation rows.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <algorithm>

#include "app/carotid_task.h"

namespace carotid {
namespace {

TEST(CarotidMetrics, BalancedWeightsAsScikitLearn) {
  // 6 samples: 4 of class 0, 2 of class 1 -> 6 / (2 * 4) and 6 / (2 * 2).
  std::vector<Sample> s = {{0, 0, 0}, {1, 0, 0}, {2, 1, 0}, {3, 1, 0}, {4, 2, 1}, {5, 3, 1}};
  const auto w = balanced_class_weights(s, 2);
  EXPECT_DOUBLE_EQ(w[0], 0.75);
  EXPECT_DOUBLE_EQ(w[1], 1.5);
  EXPECT_DOUBLE_EQ(balanced_class_weights(s, 3)[2], 0.0);  // a class without samples
}

TEST(CarotidMetrics, PersonLevelIsTheMeanOfImages) {
  // Person a (label 0): images p1 = 0.2, 0.6 -> 0.4. Person b (label 1):
  // 0.7 -> 0.7. Person c (label 1): 0.3, 0.1 -> 0.2.
  const std::vector<Sample> samples = {{0, 0, 0}, {1, 0, 0}, {2, 1, 1}, {3, 2, 1}, {4, 2, 1}};
  const std::vector<std::string> persons = {"a", "b", "c"};
  const auto p1 = torch::tensor({0.2, 0.6, 0.7, 0.3, 0.1}, torch::kDouble);
  tandem::EvalRows rows = {{"prob", torch::stack({1 - p1, p1}, 1).to(torch::kFloat)},
                           {"label", torch::tensor({0, 0, 1, 1, 1}, torch::kLong)},
                           {"sample", torch::tensor({0, 1, 2, 3, 4}, torch::kLong)},
                           {"loss", torch::zeros({5})}};
  const auto m = classification_metrics(rows, samples, persons);
  // Persons predicted positive at >= 0.5: only b. tp 1, fn 1 (c), tn 1 (a).
  EXPECT_NEAR(m.at("person_accuracy"), 2.0 / 3, 1e-6);
  EXPECT_NEAR(m.at("person_sensitivity"), 0.5, 1e-6);
  EXPECT_NEAR(m.at("person_specificity"), 1.0, 1e-6);
  // Negatives {0.4}, positives {0.7, 0.2}: one of two pairs ordered -> 0.5.
  EXPECT_NEAR(m.at("person_auc"), 0.5, 1e-6);
  // Images: negatives {0.2, 0.6}, positives {0.7, 0.3, 0.1}: pairs won
  // 0.7 > both (2), 0.3 > 0.2 (1), 0.1 none -> 3 / 6.
  EXPECT_NEAR(m.at("image_auc"), 0.5, 1e-6);
  EXPECT_NEAR(m.at("image_accuracy"), 2.0 / 5, 1e-6);  // 0.2 right, 0.6 wrong, 0.7 right, 0.3/0.1 wrong
  EXPECT_EQ(m.count("person_tp"), 0u);                 // counts stay in the test report
}

TEST(CarotidMetrics, ThreeClassesUseMacroAuc) {
  const std::vector<Sample> samples = {{0, 0, 0}, {1, 1, 1}, {2, 2, 2}};
  tandem::EvalRows rows = {{"prob", torch::eye(3)},
                           {"label", torch::tensor({0, 1, 2}, torch::kLong)},
                           {"sample", torch::tensor({0, 1, 2}, torch::kLong)}};
  const auto m = classification_metrics(rows, samples, {"a", "b", "c"});
  EXPECT_DOUBLE_EQ(m.at("person_auc"), 1.0);
  EXPECT_DOUBLE_EQ(m.at("image_accuracy"), 1.0);
  EXPECT_EQ(m.count("person_f1"), 0u);
}

// train.best_metric is checked against these names before training, and the
// Trainer refuses an evaluation that gives others.
TEST(CarotidMetrics, NamesKnownBeforeEvaluationAreThoseItGives) {
  for (int64_t classes : {2, 3}) {
    const std::vector<Sample> samples = {{0, 0, 0}, {1, 1, 1}, {2, 2, classes - 1}};
    const auto labels = torch::tensor({int64_t{0}, int64_t{1}, classes - 1}, torch::kLong);
    tandem::EvalRows rows = {{"prob", torch::eye(3).narrow(1, 0, classes).contiguous()},
                             {"label", labels},
                             {"sample", torch::tensor({0, 1, 2}, torch::kLong)},
                             {"loss", torch::zeros({3})}};
    std::vector<std::string> given;
    for (const auto& [name, value] : classification_metrics(rows, samples, {"a", "b", "c"})) given.push_back(name);
    auto declared = classification_metric_names(classes);
    std::sort(declared.begin(), declared.end());
    EXPECT_EQ(given, declared) << classes << " classes";
    EXPECT_NE(std::find(declared.begin(), declared.end(), "person_auc"), declared.end());
  }
}

}  // namespace
}  // namespace carotid
