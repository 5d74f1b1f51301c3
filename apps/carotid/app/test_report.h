#pragma once
// What a training run ends with: the best model judged once on the test
// persons, written for people (confusion matrices as text and PNG, ROC curves)
// and for programs (test_report.json), at image and at person level.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "app/carotid_task.h"
#include "metrics/classifier_metrics.h"

namespace carotid {

struct ReportInputs {
  tandem::EvalRows rows;             // the evaluation rows of the test set
  std::vector<Sample> samples;       // what rows["sample"] indexes
  std::vector<std::string> persons;  // what Sample::person indexes
  std::vector<std::string> class_names;
  std::string model;                // the model file judged
  int64_t step = 0;                 // the step it was saved at, for TensorBoard's slider
  bool tensorboard = false;         // obs.tensorboard: also put the figures in dir/tb
  std::vector<std::string> images;  // what Sample::image indexes: the image files
  double threshold = 0.5;           // two classes: predicted positive when P(class 1) >= it
  // The temperature rows["prob"] are at (metrics/temperature.h); with
  // rows["logit"], the report also gives the figures at 1 ("before_temperature").
  double temperature = 1.0;
};

// Writes into `dir`: test_report.json (with two classes, each level's
// figures also at inputs.threshold, under "at_threshold"), confusion_matrix.txt,
// confusion_matrix.png and, for two classes, roc_curve.png (also as
// TensorBoard images test/confusion_matrix and test/roc_curve in dir/tb), and
// test_predictions.csv: image,person,label,loss,prob_<class>... per image,
// what read_test_predictions reads back (cross-validation pools the folds'). Returns the
// person-level metrics. Figures need gnuplot: when it is missing or fails,
// the JSON and text are still written and the reason is logged.
tandem::Metrics write_test_report(const std::string& dir, const ReportInputs& inputs);

// The figures a decision at a threshold gives (BinaryMetrics::decided), as
// JSON, each name after `prefix`: every report's "at the threshold" object.
nlohmann::json decided_json(const BinaryMetrics& m, const std::string& prefix = "");

// A test_predictions.csv as ReportInputs (rows "prob", "label", "loss",
// "sample"; one Sample per row; class names from the prob_ columns). Throws
// tandem::UsageError naming the file and line for a missing file or column or
// a value that is not a number.
ReportInputs read_test_predictions(const std::string& path);

}  // namespace carotid
