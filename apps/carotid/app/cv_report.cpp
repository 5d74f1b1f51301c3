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
#include "tandem/error.h"
#include "tandem/io/atomic_file.h"

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

bool fold_done(const std::string& cv_dir, int64_t fold) {
  return fs::is_regular_file(fs::path(fold_dir(cv_dir, fold)) / "test_predictions.csv");
}

std::string write_cv_report(const std::string& cv_dir, int64_t folds, bool tensorboard) {
  std::string missing;
  for (int64_t k = 0; k < folds; ++k)
    if (!fold_done(cv_dir, k)) missing += (missing.empty() ? "" : ", ") + std::to_string(k);
  if (!missing.empty())
    throw tandem::UsageError(cv_dir + ": fold(s) " + missing + " of " + std::to_string(folds) +
                             " have no test_predictions.csv yet: run `apps/carotid cv --fold K --run-dir " + cv_dir +
                             "` for each");
  std::vector<ReportInputs> inputs;
  nlohmann::json per_fold = nlohmann::json::array();
  std::map<std::string, std::vector<double>> values;  // metric -> one value per fold
  for (int64_t k = 0; k < folds; ++k) {
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
  nlohmann::json mean, spread;
  std::string table = "metric                        mean ± std over " + std::to_string(folds) + " folds\n";
  for (const auto& [name, v] : values) {
    double m = 0, ss = 0;
    for (double x : v) m += x;
    m /= static_cast<double>(v.size());
    for (double x : v) ss += (x - m) * (x - m);
    const double sd = std::sqrt(ss / static_cast<double>(v.size() - 1));
    mean[name] = m;
    spread[name] = sd;
    char line[128];
    std::snprintf(line, sizeof line, "%-29s %.4f ± %.4f\n", name.c_str(), m, sd);
    table += line;
  }
  ReportInputs all = pooled(inputs);
  all.model = "out-of-fold predictions of " + std::to_string(folds) + " fold models";
  // The fold ensemble decides at the mean of its models' thresholds, as predict does.
  std::vector<std::string> models;
  for (int64_t k = 0; k < folds; ++k) models.push_back((fs::path(fold_dir(cv_dir, k)) / "models" / "best_model.h5").string());
  all.threshold = kept_threshold(models);
  all.tensorboard = tensorboard;
  const auto pooled_metrics = write_test_report(cv_dir, all);
  nlohmann::json report = {{"folds", folds}, {"per_fold", per_fold}, {"mean", mean}, {"std", spread},
                           {"pooled_out_of_fold", pooled_metrics}};
  tandem::write_bytes_atomically((fs::path(cv_dir) / "cv_report.json").string(), report.dump(2) + "\n");
  tandem::write_bytes_atomically((fs::path(cv_dir) / "cv_report.txt").string(), table);
  return table;
}

}  // namespace carotid
