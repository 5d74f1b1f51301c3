#pragma once
// What a cross-validation ends with: the folds' test predictions gathered
// into one report, each fold's figures with their mean and spread, and the
// pooled out-of-fold predictions judged as one test set (every person once).
#include <cstdint>
#include <string>

namespace carotid {

// The folder of fold k inside a cross-validation folder: CV/fold-k.
std::string fold_dir(const std::string& cv_dir, int64_t fold);
// Whether fold k has finished: its test_predictions.csv exists.
bool fold_done(const std::string& cv_dir, int64_t fold);

// Reads CV/fold-0 .. fold-(k-1)/test_predictions.csv and writes into CV:
// cv_report.json (per fold: persons, images and every metric; the mean and
// the sample standard deviation over folds), cv_report.txt (the same as a
// table) and, for the pooled out-of-fold predictions, what write_test_report
// writes (test_report.json, confusion matrix, ROC curve,
// test_predictions.csv), at the mean of the fold models' thresholds. Throws tandem::UsageError naming the folds not
// done or a fold whose classes differ. Returns the table's text.
std::string write_cv_report(const std::string& cv_dir, int64_t folds, bool tensorboard);

}  // namespace carotid
