#pragma once
// A cross-validation folder's layout, which cv writes, cv-report reads and
// predict --model CV takes as an ensemble: CV/fold-k for each fold, with
// CV/fold-k/model-m for each model when a fold has several
// (cv.models_per_fold > 1); a run or fold is done once its
// test_predictions.csv exists.
#include <cstdint>
#include <string>
#include <vector>

namespace carotid {

// The folder of fold k inside a cross-validation folder: CV/fold-k.
std::string fold_dir(const std::string& cv_dir, int64_t fold);
// The train run of model m of fold k when a fold has several
// (cv.models_per_fold > 1): CV/fold-k/model-m. With one, fold-k is the run.
std::string fold_model_dir(const std::string& cv_dir, int64_t fold, int64_t model);
// The train runs of fold k: its model-m folders when it has them, else the
// fold's own folder.
std::vector<std::string> fold_runs(const std::string& cv_dir, int64_t fold);
// The model file of each of fold k's runs, as tandem::trained_model finds it
// (best_model.h5, else final_model.h5); "" for a run that has neither yet.
std::vector<std::string> fold_models(const std::string& cv_dir, int64_t fold);
// Whether a run (or a fold: its ensemble) has finished: its test_predictions.csv exists.
bool run_done(const std::string& dir);
bool fold_done(const std::string& cv_dir, int64_t fold);
// The folds of 0 .. folds-1 not done yet, and the same as text ("1, 2").
std::vector<int64_t> missing_folds(const std::string& cv_dir, int64_t folds);
std::string fold_list(const std::vector<int64_t>& folds);
// Throws tandem::UsageError naming the folds not done and how to run them.
void require_folds_done(const std::string& cv_dir, int64_t folds);

}  // namespace carotid
