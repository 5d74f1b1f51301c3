// Person-level cross-validation: folds that test every person once, keep the
// classes' proportions, and do not depend on the order persons come in; a
// fold's run tests on its fold only; test predictions that round-trip; and
// the gathered report against figures worked out by hand.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "../unit/test_support.h"
#include "persons_fixture.h"
#include "app/cv_report.h"
#include "app/test_report.h"
#include "data/folds.h"
#include "metrics/threshold.h"
#include "tandem/error.h"

namespace {

namespace fs = std::filesystem;
using carotid::Part;
using carotid::Person;
using tandem::UsageError;
using tandem::testing::message_of;

using carotid::testing::make_persons;

TEST(CarotidFolds, EveryFoldHoldsItsShareOfEachClass) {
  const auto persons = make_persons(154, 60);  // BreastMNIST's 214 persons
  for (const int64_t k : {2, 3, 5, 10}) {
    const auto folds = carotid::assign_folds(persons, k, 42);
    std::map<std::pair<int64_t, int64_t>, int> count;  // (fold, label) -> persons
    std::map<int64_t, int> size;
    for (size_t i = 0; i < persons.size(); ++i) {
      ASSERT_GE(folds[i], 0);
      ASSERT_LT(folds[i], k);
      ++count[{folds[i], persons[i].label}];
      ++size[folds[i]];
    }
    for (int64_t label : {0, 1}) {
      const double share = (label == 0 ? 154.0 : 60.0) / static_cast<double>(k);
      for (int64_t f = 0; f < k; ++f)
        EXPECT_LE(std::abs(count[{f, label}] - share), 1.0) << "k " << k << " fold " << f << " class " << label;
    }
    for (int64_t f = 0; f < k; ++f) EXPECT_LE(std::abs(size[f] - 214.0 / k), 1.0) << "k " << k << " fold " << f;
  }
}

TEST(CarotidFolds, DependOnIdsLabelsAndSeedNotOrder) {
  const auto persons = make_persons(20, 9);
  auto shuffled = persons;
  std::reverse(shuffled.begin(), shuffled.end());
  std::rotate(shuffled.begin(), shuffled.begin() + 7, shuffled.end());
  const auto a = carotid::assign_folds(persons, 5, 7);
  const auto b = carotid::assign_folds(shuffled, 5, 7);
  std::map<std::string, int64_t> fold_of;
  for (size_t i = 0; i < persons.size(); ++i) fold_of[persons[i].id] = a[i];
  for (size_t i = 0; i < shuffled.size(); ++i) EXPECT_EQ(b[i], fold_of[shuffled[i].id]) << shuffled[i].id;
  EXPECT_NE(carotid::assign_folds(persons, 5, 8), a);  // another seed, other folds
}

TEST(CarotidFolds, TooFewOrTooManyFoldsAreRefusedByKey) {
  const auto persons = make_persons(3, 2);
  EXPECT_NE(message_of<UsageError>([&] { carotid::assign_folds(persons, 1, 0); }).find("cv.folds must be at least 2"),
            std::string::npos);
  EXPECT_NE(message_of<UsageError>([&] {
              carotid::assign_folds(persons, 6, 0);
            }).find("cv.folds = 6 is more than the 5 persons"),
            std::string::npos);
}

TEST(CarotidFolds, AFoldTestsOnItsPersonsAndPicksItsModelOnOthers) {
  const auto persons = make_persons(40, 20);
  const auto folds = carotid::assign_folds(persons, 3, 1);
  for (int64_t fold = 0; fold < 3; ++fold) {
    const auto parts = carotid::fold_parts(persons, folds, fold, 0.2, 1);
    std::map<std::pair<Part, int64_t>, int> count;
    for (size_t i = 0; i < persons.size(); ++i) {
      EXPECT_EQ(parts[i] == Part::test, folds[i] == fold) << persons[i].id;
      ++count[{parts[i], persons[i].label}];
    }
    // The others, per class: 0.2 of them for validation (within rounding).
    for (int64_t label : {0, 1}) {
      const int rest = count[{Part::train, label}] + count[{Part::val, label}];
      EXPECT_LE(std::abs(count[{Part::val, label}] - 0.2 * rest), 0.5 + 1e-9) << "fold " << fold;
    }
  }
}

// Two persons a and b with images {0.9, 0.7} and {0.2}, labels 1 and 0.
carotid::ThresholdRule youden() { return carotid::parse_threshold_rule("youden", "model.threshold"); }

carotid::ReportInputs small_inputs(const std::string& a, const std::string& b, double pa1, double pa2, double pb) {
  carotid::ReportInputs in;
  in.class_names = {"benign", "malignant"};
  in.persons = {a, b};
  in.images = {a + "/0.png", a + "/1.png", b + "/0.png"};
  in.samples = {{0, 0, 1}, {1, 0, 1}, {2, 1, 0}};
  in.rows["prob"] = torch::tensor({1 - pa1, pa1, 1 - pa2, pa2, 1 - pb, pb}, torch::kDouble).view({3, 2});
  in.rows["label"] = torch::tensor({1, 1, 0}, torch::kLong);
  in.rows["loss"] = torch::tensor({-std::log(pa1), -std::log(pa2), -std::log(1 - pb)}, torch::kDouble);
  in.rows["sample"] = torch::tensor({0, 1, 2}, torch::kLong);
  in.model = "m.h5";
  return in;
}

class CarotidCvReport : public tandem::testing::TempDirTest {};

TEST_F(CarotidCvReport, TestPredictionsRoundTrip) {
  const auto in = small_inputs("a", "b", 0.9, 0.7, 0.2);
  carotid::write_test_report(path(""), in);
  const auto back = carotid::read_test_predictions(path("test_predictions.csv"));
  EXPECT_EQ(back.class_names, in.class_names);
  EXPECT_EQ(back.persons, in.persons);
  EXPECT_EQ(back.images, in.images);
  EXPECT_TRUE(torch::allclose(back.rows.at("prob").to(torch::kDouble), in.rows.at("prob"), 0, 1e-7));
  EXPECT_TRUE(torch::equal(back.rows.at("label"), in.rows.at("label")));
  EXPECT_TRUE(torch::allclose(back.rows.at("loss"), in.rows.at("loss")));
  EXPECT_NE(message_of<UsageError>([&] { carotid::read_test_predictions(path("none.csv")); }).find("none.csv"),
            std::string::npos);
}

TEST_F(CarotidCvReport, FoldsAreSummedUpAndPooled) {
  // Fold 0 ranks its two persons right (AUC 1, accuracy 1); fold 1 wrong
  // (person c: mean 0.3 < 0.5 though positive; d: 0.6 though negative):
  // AUC 0, accuracy 0. Mean 0.5, sample std sqrt(0.5) for both.
  for (int fold : {0, 1}) fs::create_directories(carotid::fold_dir(path("cv"), fold));
  carotid::write_test_report(carotid::fold_dir(path("cv"), 0), small_inputs("a", "b", 0.9, 0.7, 0.2));
  EXPECT_NE(
      message_of<UsageError>([&] { carotid::write_cv_report(path("cv"), 2, false, youden()); }).find("fold(s) 1 of 2"),
      std::string::npos);
  carotid::write_test_report(carotid::fold_dir(path("cv"), 1), small_inputs("c", "d", 0.4, 0.2, 0.6));
  carotid::write_cv_report(path("cv"), 2, false, youden());

  std::ifstream in(path("cv/cv_report.json"));
  const auto report = nlohmann::json::parse(in);
  EXPECT_EQ(report["per_fold"].size(), 2u);
  EXPECT_EQ(report["per_fold"][0]["persons"], 2);
  EXPECT_EQ(report["per_fold"][1]["images"], 3);
  EXPECT_DOUBLE_EQ(report["per_fold"][0]["person_auc"].get<double>(), 1.0);
  EXPECT_DOUBLE_EQ(report["per_fold"][1]["person_auc"].get<double>(), 0.0);
  EXPECT_DOUBLE_EQ(report["mean"]["person_auc"].get<double>(), 0.5);
  EXPECT_NEAR(report["std"]["person_auc"].get<double>(), std::sqrt(0.5), 1e-12);
  EXPECT_DOUBLE_EQ(report["mean"]["person_accuracy"].get<double>(), 0.5);
  // Pooled: persons a 0.8, b 0.2, c 0.3, d 0.6 with labels 1 0 1 0: of the 4
  // positive-negative pairs a>b, a>d, c>b right, c<d wrong: AUC 3/4.
  EXPECT_DOUBLE_EQ(report["pooled_out_of_fold"]["person_auc"].get<double>(), 0.75);
  const auto pooled = carotid::read_test_predictions(path("cv/test_predictions.csv"));
  EXPECT_EQ(pooled.persons, (std::vector<std::string>{"a", "b", "c", "d"}));
  EXPECT_TRUE(fs::exists(path("cv/cv_report.txt")));
  EXPECT_TRUE(fs::exists(path("cv/test_report.json")));
}

TEST_F(CarotidCvReport, EachFoldIsJudgedAtTheThresholdTheOtherFoldsPick) {
  // Persons (first positive, second negative) by fold: a 0.8 b 0.2 | c 0.3
  // d 0.1 | e 0.6 f 0.5. Youden on folds 1+2 (c .3+ d .1- e .6+ f .5-): J is
  // 0.5 at 0.6 and at 0.3, ties keep the higher: 0.6; fold 0 at it: a, b
  // right. Folds 0+2: 0.6 separates them (J 1); fold 1 at 0.6: c missed,
  // d right. Folds 0+1: 0.3 (J 1); fold 2 at 0.3: e caught, f too.
  // Sensitivity 1, 0, 1; specificity 1, 1, 0. All six persons: J 2/3 at
  // 0.6 and at 0.3, so 0.6 for the ensemble.
  const std::string cv = path("cv");
  const std::vector<carotid::ReportInputs> folds = {small_inputs("a", "b", 0.9, 0.7, 0.2),
                                                    small_inputs("c", "d", 0.4, 0.2, 0.1),
                                                    small_inputs("e", "f", 0.6, 0.6, 0.5)};
  for (size_t k = 0; k < folds.size(); ++k) {
    fs::create_directories(carotid::fold_dir(cv, static_cast<int64_t>(k)));
    carotid::write_test_report(carotid::fold_dir(cv, static_cast<int64_t>(k)), folds[k]);
  }
  EXPECT_EQ(carotid::ensemble_threshold(cv), std::nullopt);
  const std::string table = carotid::write_cv_report(cv, 3, false, youden());
  std::ifstream in(path("cv/cv_report.json"));
  const auto t = nlohmann::json::parse(in)["threshold"];
  EXPECT_EQ(t["rule"], "youden");
  const std::vector<double> picked = {0.6, 0.6, 0.3}, sensitivity = {1, 0, 1}, specificity = {1, 1, 0};
  for (size_t k = 0; k < 3; ++k) {
    EXPECT_NEAR(t["per_fold"][k]["threshold"].get<double>(), picked[k], 1e-6) << k;
    EXPECT_DOUBLE_EQ(t["per_fold"][k]["person_sensitivity"].get<double>(), sensitivity[k]) << k;
    EXPECT_DOUBLE_EQ(t["per_fold"][k]["person_specificity"].get<double>(), specificity[k]) << k;
  }
  EXPECT_NEAR(t["mean"]["person_balanced_accuracy"].get<double>(), 2.0 / 3, 1e-12);
  EXPECT_NEAR(t["ensemble"].get<double>(), 0.6, 1e-6);
  EXPECT_NEAR(carotid::ensemble_threshold(cv).value(), 0.6, 1e-6);
  // Every figure a threshold decides (BinaryMetrics::decided) reaches each
  // report at a threshold under one name: a figure added there needs no
  // report touched.
  std::set<std::string> decided, cross_fitted = {"fold", "threshold"}, at_threshold = {"threshold", "confusion_matrix"};
  for (const auto& [name, value] : carotid::BinaryMetrics{}.decided()) {
    decided.insert(name);
    cross_fitted.insert("person_" + name);
    at_threshold.insert(name);
  }
  EXPECT_EQ(decided, (std::set<std::string>{"accuracy", "balanced_accuracy", "precision", "sensitivity",
                                            "specificity", "f1"}));
  std::set<std::string> keys;
  for (const auto& [name, value] : t["per_fold"][0].items()) keys.insert(name);
  EXPECT_EQ(keys, cross_fitted);
  std::ifstream fold_report(carotid::fold_dir(cv, 0) + "/test_report.json");
  const auto persons = nlohmann::json::parse(fold_report).at("persons");
  keys.clear();
  for (const auto& [name, value] : persons.at("at_threshold").items()) keys.insert(name);
  EXPECT_EQ(keys, at_threshold);
  EXPECT_NE(table.find("predict --model CV decides at 0.6000 (youden on every fold's persons)"), std::string::npos)
      << table;

  // A fixed rule is every fold's threshold and the ensemble's.
  carotid::write_cv_report(cv, 3, false, carotid::parse_threshold_rule("0.25", "model.threshold"));
  EXPECT_DOUBLE_EQ(carotid::ensemble_threshold(cv).value(), 0.25);

  std::ofstream(path("cv/cv_report.json")) << "{\"threshold\": {}}";
  EXPECT_NE(message_of<UsageError>([&] {
              carotid::ensemble_threshold(cv);
            }).find("cv_report.json: \"threshold\" has no number \"ensemble\""),
            std::string::npos);
}

TEST_F(CarotidCvReport, AFoldsModelIsItsBestModelElseItsFinalOne) {
  // train.best_metric = "none" leaves final_model.h5 alone; predict --model CV
  // and the fold's threshold must find it there.
  const std::string run = carotid::fold_model_dir(path("cv"), 0, 0);
  fs::create_directories(run + "/models");
  EXPECT_EQ(carotid::fold_models(path("cv"), 0), (std::vector<std::string>{""}));
  std::ofstream(run + "/models/final_model.h5") << "h5";
  EXPECT_EQ(carotid::fold_models(path("cv"), 0), (std::vector<std::string>{run + "/models/final_model.h5"}));
  std::ofstream(run + "/models/best_model.h5") << "h5";
  EXPECT_EQ(carotid::fold_models(path("cv"), 0), (std::vector<std::string>{run + "/models/best_model.h5"}));
}

TEST_F(CarotidCvReport, AFoldOfSeveralModelsIsJudgedByTheirMean) {
  // Fold 0: model 0 ranks a (0.8) over b (0.2), model 1 b (0.4) over a
  // (0.2): person AUC 1 and 0; their mean a 0.5, b 0.3: AUC 1. Fold 1:
  // model 0 c 0.3 < d 0.6 (0), model 1 c 0.8 > d 0.2 (1); mean c 0.55 >
  // d 0.4: AUC 1. So the ensembles score 1 on both folds, one model 0.5.
  const std::string cv = path("cv");
  auto model = [&](int fold, int m) {
    fs::create_directories(carotid::fold_model_dir(cv, fold, m));
    return carotid::fold_model_dir(cv, fold, m);
  };
  carotid::write_test_report(model(0, 0), small_inputs("a", "b", 0.9, 0.7, 0.2));
  carotid::write_test_report(model(0, 1), small_inputs("a", "b", 0.1, 0.3, 0.4));
  carotid::write_test_report(model(1, 0), small_inputs("c", "d", 0.4, 0.2, 0.6));
  carotid::write_test_report(model(1, 1), small_inputs("c", "d", 0.8, 0.8, 0.2));
  EXPECT_EQ(carotid::fold_runs(cv, 1), (std::vector<std::string>{model(1, 0), model(1, 1)}));
  EXPECT_EQ(carotid::fold_models(cv, 0), (std::vector<std::string>{"", ""}));
  for (int fold : {0, 1}) carotid::write_fold_ensemble(cv, fold, false);

  const auto fold0 = carotid::read_test_predictions(carotid::fold_dir(cv, 0) + "/test_predictions.csv");
  EXPECT_EQ(fold0.persons, (std::vector<std::string>{"a", "b"}));
  EXPECT_NEAR(fold0.rows.at("prob")[0][1].item<double>(), 0.5, 1e-6);
  EXPECT_NEAR(fold0.rows.at("prob")[2][1].item<double>(), 0.3, 1e-6);
  EXPECT_NEAR(fold0.rows.at("loss")[2].item<double>(), -std::log(0.7), 1e-6);

  carotid::write_cv_report(cv, 2, false, youden());
  std::ifstream in(path("cv/cv_report.json"));
  const auto report = nlohmann::json::parse(in);
  EXPECT_EQ(report["models_per_fold"], 2);
  EXPECT_DOUBLE_EQ(report["mean"]["person_auc"].get<double>(), 1.0);
  EXPECT_DOUBLE_EQ(report["single_model_mean"]["person_auc"].get<double>(), 0.5);
  // The pooled persons a 0.5, b 0.3, c 0.55, d 0.4 (labels 1 0 1 0): every
  // positive above every negative.
  EXPECT_DOUBLE_EQ(report["pooled_out_of_fold"]["person_auc"].get<double>(), 1.0);

  // Models of other persons cannot be averaged, and folds of unequal models
  // are not one cross-validation.
  carotid::write_test_report(model(0, 1), small_inputs("a", "x", 0.1, 0.3, 0.4));
  EXPECT_NE(message_of<UsageError>([&] {
              carotid::write_fold_ensemble(cv, 0, false);
            }).find("model-1/test_predictions.csv: not the images, persons, labels and classes of"),
            std::string::npos);
  carotid::write_test_report(model(1, 2), small_inputs("c", "d", 0.8, 0.8, 0.2));
  EXPECT_NE(message_of<UsageError>([&] {
              carotid::write_cv_report(cv, 2, false, youden());
            }).find("fold-1 has 3 model(s), fold 0 2: every fold needs as many"),
            std::string::npos);
}

TEST(CarotidThreshold, RulesAreReadOrRefusedByKey) {
  EXPECT_EQ(carotid::parse_threshold_rule("youden", "k").kind, carotid::ThresholdRule::Kind::youden);
  const auto s = carotid::parse_threshold_rule("sensitivity=0.9", "k");
  EXPECT_EQ(s.kind, carotid::ThresholdRule::Kind::sensitivity);
  EXPECT_DOUBLE_EQ(s.value, 0.9);
  EXPECT_DOUBLE_EQ(carotid::parse_threshold_rule("0.3", "k").value, 0.3);
  for (const char* bad : {"", "0", "1", "sensitivity=0", "sensitivity=1.5", "youden2", "0.3x"})
    EXPECT_NE(message_of<UsageError>([&] {
                carotid::parse_threshold_rule(bad, "model.threshold");
              }).find("model.threshold = '" + std::string(bad) + "'"),
              std::string::npos)
        << bad;
}

TEST(CarotidThreshold, ChosenOnTheCurveByHand) {
  // Scores high to low: 0.9 P, 0.8 N, 0.7 P, 0.4 P, 0.3 N, 0.2 N (3 P, 3 N).
  const std::vector<double> p = {0.9, 0.8, 0.7, 0.4, 0.3, 0.2};
  const std::vector<int64_t> y = {1, 0, 1, 1, 0, 0};
  // J = tpr - fpr at each threshold: 0.9: 1/3; 0.8: 0; 0.7: 1/3; 0.4: 2/3;
  // 0.3: 1/3; 0.2: 0. Youden: 0.4.
  EXPECT_DOUBLE_EQ(carotid::choose_threshold(carotid::parse_threshold_rule("youden", "k"), p, y), 0.4);
  // Sensitivity >= 0.6 first reached at 0.7 (2/3), all positives at 0.4.
  EXPECT_DOUBLE_EQ(carotid::choose_threshold(carotid::parse_threshold_rule("sensitivity=0.6", "k"), p, y), 0.7);
  EXPECT_DOUBLE_EQ(carotid::choose_threshold(carotid::parse_threshold_rule("sensitivity=1", "k"), p, y), 0.4);
  EXPECT_DOUBLE_EQ(carotid::choose_threshold(carotid::parse_threshold_rule("0.25", "k"), p, y), 0.25);
  // One class only: no curve, 0.5.
  EXPECT_DOUBLE_EQ(carotid::choose_threshold(carotid::parse_threshold_rule("youden", "k"), {0.2, 0.9}, {1, 1}), 0.5);
}

}  // namespace
