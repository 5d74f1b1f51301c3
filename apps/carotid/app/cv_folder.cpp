#include "app/cv_folder.h"

#include <filesystem>

#include "tandem/error.h"
#include "tandem/text/message_text.h"
#include "tandem/train/trainer.h"

namespace carotid {
namespace fs = std::filesystem;

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

std::vector<int64_t> missing_folds(const std::string& cv_dir, int64_t folds) {
  std::vector<int64_t> missing;
  for (int64_t k = 0; k < folds; ++k)
    if (!fold_done(cv_dir, k)) missing.push_back(k);
  return missing;
}

std::string fold_list(const std::vector<int64_t>& folds) {
  std::vector<std::string> names;
  for (int64_t k : folds) names.push_back(std::to_string(k));
  return tandem::first_few(names, names.size());
}

void require_folds_done(const std::string& cv_dir, int64_t folds) {
  const std::vector<int64_t> missing = missing_folds(cv_dir, folds);
  if (!missing.empty())
    throw tandem::UsageError(cv_dir + ": fold(s) " + fold_list(missing) + " of " + std::to_string(folds) +
                             " have no test_predictions.csv yet: run `apps/carotid cv --fold K --run-dir " + cv_dir +
                             "` for each");
}

}  // namespace carotid
