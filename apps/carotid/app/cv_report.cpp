#include "app/cv_report.h"

#include <torch/torch.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <vector>

#include "app/carotid_task.h"
#include "app/model.h"
#include "app/test_report.h"
#include "metrics/ensemble.h"
#include "tandem/error.h"
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

std::string fold_dir(const std::string& cv_dir, int64_t fold) {
  return (fs::path(cv_dir) / ("fold-" + std::to_string(fold))).string();
}

std::string fold_model_dir(const std::string& cv_dir, int64_t fold, int64_t model) {
  return (fs::path(fold_dir(cv_dir, fold)) / ("model-" + std::to_string(model))).string();
}

std::vector<std::string> fold_runs(const std::string& cv_dir, int64_t fold) {
  std::vector<std::string> runs;
  for (int64_t m = 0; fs::is_directory(fold_model_dir(cv_dir, fold, m)); ++m)
    runs.push_back(fold_model_dir(cv_dir, fold, m));
  if (runs.empty()) runs.push_back(fold_dir(cv_dir, fold));
  return runs;
}

std::vector<std::string> fold_models(const std::string& cv_dir, int64_t fold) {
  std::vector<std::string> files;
  for (const auto& run : fold_runs(cv_dir, fold)) files.push_back(tandem::trained_model(run));
  return files;
}

bool run_done(const std::string& dir) { return fs::is_regular_file(fs::path(dir) / "test_predictions.csv"); }

bool fold_done(const std::string& cv_dir, int64_t fold) { return run_done(fold_dir(cv_dir, fold)); }

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

std::string write_cv_report(const std::string& cv_dir, int64_t folds, bool tensorboard) {
  std::string missing;
  for (int64_t k = 0; k < folds; ++k)
    if (!fold_done(cv_dir, k)) missing += (missing.empty() ? "" : ", ") + std::to_string(k);
  if (!missing.empty())
    throw tandem::UsageError(cv_dir + ": fold(s) " + missing + " of " + std::to_string(folds) +
                             " have no test_predictions.csv yet: run `apps/carotid cv --fold K --run-dir " + cv_dir +
                             "` for each");
  const size_t per_fold_models = fold_runs(cv_dir, 0).size();
  std::vector<ReportInputs> inputs;
  nlohmann::json per_fold = nlohmann::json::array();
  std::map<std::string, std::vector<double>> values;  // metric -> one value per fold
  std::map<std::string, std::vector<double>> single;  // metric -> one value per model of every fold
  for (int64_t k = 0; k < folds; ++k) {
    const std::vector<std::string> runs = fold_runs(cv_dir, k);
    if (runs.size() != per_fold_models)
      throw tandem::UsageError(fold_dir(cv_dir, k) + " has " + std::to_string(runs.size()) + " model(s), fold 0 " +
                               std::to_string(per_fold_models) + ": every fold needs as many");
    if (per_fold_models > 1)
      for (const auto& run : runs) {
        const ReportInputs one = read_test_predictions((fs::path(run) / "test_predictions.csv").string());
        for (const auto& [name, value] : classification_metrics(one.rows, one.samples, one.persons))
          single[name].push_back(value);
      }
    inputs.push_back(read_test_predictions((fs::path(fold_dir(cv_dir, k)) / "test_predictions.csv").string()));
    const ReportInputs& in = inputs.back();
    if (in.class_names != inputs.front().class_names)
      throw tandem::UsageError(fold_dir(cv_dir, k) + ": its classes differ from fold 0's");
    nlohmann::json fold = {{"fold", k}, {"persons", in.persons.size()}, {"images", in.samples.size()}};
    for (const auto& [name, value] : classification_metrics(in.rows, in.samples, in.persons)) {
      fold[name] = value;
      values[name].push_back(value);
    }
    per_fold.push_back(fold);
  }
  nlohmann::json mean, spread, single_mean;
  std::string table = "metric                        mean ± std over " + std::to_string(folds) + " folds";
  if (per_fold_models > 1) table += " of " + std::to_string(per_fold_models) + " models    one model's mean";
  table += "\n";
  for (const auto& [name, v] : values) {
    double m = 0, ss = 0;
    for (double x : v) m += x;
    m /= static_cast<double>(v.size());
    for (double x : v) ss += (x - m) * (x - m);
    const double sd = std::sqrt(ss / static_cast<double>(v.size() - 1));
    mean[name] = m;
    spread[name] = sd;
    char line[160];
    std::snprintf(line, sizeof line, "%-29s %.4f ± %.4f", name.c_str(), m, sd);
    table += line;
    if (per_fold_models > 1) {
      double s1 = 0;
      for (double x : single.at(name)) s1 += x;
      single_mean[name] = s1 / static_cast<double>(single.at(name).size());
      std::snprintf(line, sizeof line, "%*s%.4f", 24, "", single_mean[name].get<double>());
      table += line;
    }
    table += "\n";
  }
  ReportInputs all = pooled(inputs);
  all.model = "out-of-fold predictions of " + std::to_string(folds) + " folds' models";
  // The fold ensemble decides at the mean of its models' thresholds, as predict does.
  std::vector<std::string> models;
  for (int64_t k = 0; k < folds; ++k)
    for (const auto& file : fold_models(cv_dir, k)) models.push_back(file);
  all.threshold = kept_threshold(models);
  all.tensorboard = tensorboard;
  const auto pooled_metrics = write_test_report(cv_dir, all);
  nlohmann::json report = {{"folds", folds},       {"models_per_fold", per_fold_models},
                           {"per_fold", per_fold}, {"mean", mean},
                           {"std", spread},        {"pooled_out_of_fold", pooled_metrics}};
  if (per_fold_models > 1) report["single_model_mean"] = single_mean;
  tandem::write_bytes_atomically((fs::path(cv_dir) / "cv_report.json").string(), report.dump(2) + "\n");
  tandem::write_bytes_atomically((fs::path(cv_dir) / "cv_report.txt").string(), table);
  return table;
}

}  // namespace carotid
