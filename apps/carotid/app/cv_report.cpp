#include "app/cv_report.h"

#include <torch/torch.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <nlohmann/json.hpp>
#include <vector>

#include "app/carotid_task.h"
#include "app/model.h"
#include "app/test_report.h"
#include "metrics/classifier_metrics.h"
#include "metrics/ensemble.h"
#include "metrics/threshold.h"
#include "tandem/error.h"
#include "tandem/text/message_text.h"
#include "tandem/io/atomic_file.h"
#include "tandem/train/trainer.h"

namespace carotid {
namespace fs = std::filesystem;

namespace {

// The folds' rows one after another, persons and images renumbered.
ReportInputs pooled(const std::vector<ReportInputs>& folds) {
  ReportInputs all;
  all.class_names = folds.front().class_names;
  std::vector<at::Tensor> probs, labels, losses;
  for (const auto& f : folds) {
    const auto person0 = static_cast<int64_t>(all.persons.size());
    const auto image0 = static_cast<int64_t>(all.samples.size());
    all.persons.insert(all.persons.end(), f.persons.begin(), f.persons.end());
    all.images.insert(all.images.end(), f.images.begin(), f.images.end());
    for (const auto& s : f.samples) all.samples.push_back({image0 + s.image, person0 + s.person, s.label});
    probs.push_back(f.rows.at("prob"));
    labels.push_back(f.rows.at("label"));
    losses.push_back(f.rows.at("loss"));
  }
  all.rows["prob"] = torch::cat(probs);
  all.rows["label"] = torch::cat(labels);
  all.rows["loss"] = torch::cat(losses);
  all.rows["sample"] = torch::arange(static_cast<int64_t>(all.samples.size()), torch::kLong);
  return all;
}

}  // namespace

void write_fold_ensemble(const std::string& cv_dir, int64_t fold, bool tensorboard) {
  const std::vector<std::string> runs = fold_runs(cv_dir, fold);
  std::vector<tandem::EvalRows> rows;
  ReportInputs first;
  for (const auto& run : runs) {
    const std::string path = (fs::path(run) / "test_predictions.csv").string();
    ReportInputs in = read_test_predictions(path);
    if (rows.empty())
      first = in;
    else if (in.images != first.images || in.persons != first.persons || in.class_names != first.class_names ||
             !in.rows.at("label").equal(first.rows.at("label")))
      throw tandem::UsageError(path + ": not the images, persons, labels and classes of " + runs.front() +
                               "/test_predictions.csv, so the fold's models cannot be averaged");
    rows.push_back(in.rows);
  }
  ReportInputs ensemble = first;
  ensemble.rows = mean_of_models(rows);
  ensemble.model = "mean of the " + std::to_string(runs.size()) + " models in " + fold_dir(cv_dir, fold);
  ensemble.threshold = kept_threshold(fold_models(cv_dir, fold));
  ensemble.tensorboard = tensorboard;
  write_test_report(fold_dir(cv_dir, fold), ensemble);
}

namespace {

// The operating point, cross-fitted: fold k is judged at the threshold the
// rule picks on the other folds' test persons, so its figures are those of a
// threshold chosen on persons other than the ones it decides on, as every
// user of the shipped ensemble meets it. Chosen on the pooled persons of
// k - 1 folds (about 170 here), not on a fold's handful of validation
// persons, whose threshold swings with each one of them. The one picked on
// every fold's persons is the ensemble's: predict --model CV decides at it.
nlohmann::json cross_fitted_threshold(const std::vector<ReportInputs>& inputs, const ThresholdRule& rule) {
  std::vector<PersonScores> scores;
  for (const auto& in : inputs) scores.push_back(person_scores(in.rows, in.samples, in.persons));
  auto pick = [&](size_t left_out) {
    std::vector<double> p;
    std::vector<int64_t> y;
    for (size_t k = 0; k < scores.size(); ++k) {
      if (k == left_out) continue;
      const std::vector<double> positive = scores[k].positive();
      p.insert(p.end(), positive.begin(), positive.end());
      y.insert(y.end(), scores[k].labels.begin(), scores[k].labels.end());
    }
    return choose_threshold(rule, p, y);
  };
  nlohmann::json per_fold = nlohmann::json::array();
  std::map<std::string, double> mean;
  for (size_t k = 0; k < scores.size(); ++k) {
    const double t = pick(k);
    nlohmann::json fold = decided_json(binary_metrics(scores[k].positive(), scores[k].labels, t), "person_");
    for (const auto& [name, value] : fold.items())
      mean[name] += value.get<double>() / static_cast<double>(scores.size());
    fold["fold"] = k;
    fold["threshold"] = t;
    per_fold.push_back(fold);
  }
  return {{"rule", rule.text}, {"ensemble", pick(scores.size())}, {"per_fold", per_fold}, {"mean", mean}};
}

}  // namespace

std::optional<double> ensemble_threshold(const std::string& cv_dir) {
  const fs::path path = fs::path(cv_dir) / "cv_report.json";
  if (!fs::is_regular_file(path)) return std::nullopt;
  std::ifstream in(path);
  const auto report = nlohmann::json::parse(in, nullptr, false);
  if (report.is_discarded())
    throw tandem::UsageError(path.string() + ": not JSON; `apps/carotid cv-report --run-dir " + cv_dir +
                             "` writes it again");
  if (!report.contains("threshold")) return std::nullopt;
  const auto& t = report["threshold"];
  if (!t.is_object() || !t.contains("ensemble") || !t["ensemble"].is_number())
    throw tandem::UsageError(path.string() +
                             ": \"threshold\" has no number \"ensemble\"; `apps/carotid cv-report --run-dir " + cv_dir +
                             "` writes it again");
  return t["ensemble"].get<double>();
}

namespace {

// Each fold's test predictions and figures, read before anything is written.
struct FoldFigures {
  size_t models_per_fold = 1;
  std::vector<ReportInputs> inputs;                   // per fold: its models' mean when it has several
  nlohmann::json per_fold = nlohmann::json::array();  // per fold: persons, images and every metric
  std::map<std::string, std::vector<double>> values;  // metric -> one value per fold
  std::map<std::string, std::vector<double>> single;  // metric -> one value per model of every fold
};

ReportInputs run_predictions(const std::string& run) {
  return read_test_predictions((fs::path(run) / "test_predictions.csv").string());
}

FoldFigures fold_figures(const std::string& cv_dir, int64_t folds) {
  FoldFigures f;
  f.models_per_fold = fold_runs(cv_dir, 0).size();
  for (int64_t k = 0; k < folds; ++k) {
    const std::vector<std::string> runs = fold_runs(cv_dir, k);
    if (runs.size() != f.models_per_fold)
      throw tandem::UsageError(fold_dir(cv_dir, k) + " has " + std::to_string(runs.size()) + " model(s), fold 0 " +
                               std::to_string(f.models_per_fold) + ": every fold needs as many");
    if (f.models_per_fold > 1)
      for (const auto& run : runs) {
        const ReportInputs one = run_predictions(run);
        for (const auto& [name, value] : classification_metrics(one.rows, one.samples, one.persons))
          f.single[name].push_back(value);
      }
    f.inputs.push_back(run_predictions(fold_dir(cv_dir, k)));
    const ReportInputs& in = f.inputs.back();
    if (in.class_names != f.inputs.front().class_names)
      throw tandem::UsageError(fold_dir(cv_dir, k) + ": its classes differ from fold 0's");
    nlohmann::json fold = {{"fold", k}, {"persons", in.persons.size()}, {"images", in.samples.size()}};
    for (const auto& [name, value] : classification_metrics(in.rows, in.samples, in.persons)) {
      fold[name] = value;
      f.values[name].push_back(value);
    }
    f.per_fold.push_back(fold);
  }
  return f;
}

double mean_of(const std::vector<double>& v) {
  double m = 0;
  for (double x : v) m += x;
  return m / static_cast<double>(v.size());
}

// Each metric's mean and sample standard deviation over the folds (and with
// several models per fold, its mean over the single models) into `report`,
// and the same as cv_report.txt's table.
std::string summarize_folds(const FoldFigures& f, int64_t folds, nlohmann::json& report) {
  const bool several = f.models_per_fold > 1;
  std::string table = "metric                        mean ± std over " + std::to_string(folds) + " folds";
  if (several) table += " of " + std::to_string(f.models_per_fold) + " models    one model's mean";
  table += "\n";
  for (const auto& [name, v] : f.values) {
    const double m = mean_of(v);
    double ss = 0;
    for (double x : v) ss += (x - m) * (x - m);
    const double sd = std::sqrt(ss / static_cast<double>(v.size() - 1));
    report["mean"][name] = m;
    report["std"][name] = sd;
    char line[160];
    std::snprintf(line, sizeof line, "%-29s %.4f ± %.4f", name.c_str(), m, sd);
    table += line;
    if (several) {
      const double one = mean_of(f.single.at(name));
      report["single_model_mean"][name] = one;
      std::snprintf(line, sizeof line, "%*s%.4f", 24, "", one);
      table += line;
    }
    table += "\n";
  }
  return table;
}

std::string threshold_text(const nlohmann::json& threshold, const ThresholdRule& rule) {
  const auto& m = threshold["mean"];
  char line[400];
  std::snprintf(line, sizeof line,
                "\nat the threshold %s picks on the other folds' persons (per fold, then the mean): person "
                "sensitivity %.4f, specificity %.4f, balanced accuracy %.4f\n"
                "predict --model CV decides at %.4f (%s on every fold's persons)\n",
                rule.text.c_str(), m["person_sensitivity"].get<double>(), m["person_specificity"].get<double>(),
                m["person_balanced_accuracy"].get<double>(), threshold["ensemble"].get<double>(), rule.text.c_str());
  return line;
}

// The pooled persons judged as one test set, at their own models' mean
// threshold, as each fold's report has them (the cross-fitted figures are
// cv_report.json's "threshold"). Writes the pooled test report into CV and
// returns its person-level metrics.
tandem::Metrics write_pooled_report(const std::string& cv_dir, int64_t folds, const FoldFigures& f, bool tensorboard) {
  ReportInputs all = pooled(f.inputs);
  all.model = "out-of-fold predictions of " + std::to_string(folds) + " folds' models";
  std::vector<std::string> models;
  for (int64_t k = 0; k < folds; ++k)
    for (const auto& file : fold_models(cv_dir, k)) models.push_back(file);
  all.threshold = kept_threshold(models);
  all.tensorboard = tensorboard;
  return write_test_report(cv_dir, all);
}

}  // namespace

std::string write_cv_report(const std::string& cv_dir, int64_t folds, bool tensorboard, const ThresholdRule& rule) {
  require_folds_done(cv_dir, folds);
  const FoldFigures f = fold_figures(cv_dir, folds);
  nlohmann::json report = {{"folds", folds}, {"models_per_fold", f.models_per_fold}, {"per_fold", f.per_fold}};
  std::string table = summarize_folds(f, folds, report);
  if (f.inputs.front().class_names.size() == 2) {
    report["threshold"] = cross_fitted_threshold(f.inputs, rule);
    table += threshold_text(report["threshold"], rule);
  }
  report["pooled_out_of_fold"] = write_pooled_report(cv_dir, folds, f, tensorboard);
  tandem::write_bytes_atomically((fs::path(cv_dir) / "cv_report.json").string(), report.dump(2) + "\n");
  tandem::write_bytes_atomically((fs::path(cv_dir) / "cv_report.txt").string(), table);
  return table;
}

}  // namespace carotid
