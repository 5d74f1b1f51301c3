#pragma once
// What a cross-validation ends with: the folds' test predictions gathered
// into one report, each fold's figures with their mean and spread, and the
// pooled out-of-fold predictions judged as one test set (every person once).
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "app/cv_folder.h"
#include "metrics/threshold.h"

namespace carotid {

// A fold of several models, once each has its test_predictions.csv: the
// mean of their probabilities (mean_of_models) judged as the fold's test
// set by write_test_report into CV/fold-k, at their mean threshold. Throws
// tandem::UsageError when the models' predictions are not of the same
// images and labels.
void write_fold_ensemble(const std::string& cv_dir, int64_t fold, bool tensorboard);

// Reads CV/fold-0 .. fold-(k-1)/test_predictions.csv and writes into CV:
// cv_report.json (per fold: persons, images and every metric; the mean and
// the sample standard deviation over folds; with several models per fold
// also each metric's mean over the single models, to show what the
// ensemble adds), cv_report.txt (the same as a table) and, for the pooled
// out-of-fold predictions, what write_test_report writes (test_report.json,
// confusion matrix, ROC curve, test_predictions.csv), at the mean of the
// fold models' thresholds. With two classes, cv_report.json's "threshold":
// `rule` applied to the persons of every fold but k, and fold k's persons
// judged at it (BinaryMetrics::decided's figures, as person_*; their mean
// over folds), and "ensemble", the rule on every fold's persons, which
// predict --model CV uses. Throws tandem::UsageError naming the folds not
// done (require_folds_done), a fold whose classes differ, or folds with
// unequal numbers of models; nothing is written then. Returns the table's text.
std::string write_cv_report(const std::string& cv_dir, int64_t folds, bool tensorboard, const ThresholdRule& rule);

// cv_report.json's threshold for the fold ensemble; none before the report
// is written (or from a report of more than two classes). Throws
// tandem::UsageError naming the file when it is not JSON or has no number there.
std::optional<double> ensemble_threshold(const std::string& cv_dir);

}  // namespace carotid
