#pragma once
// The numbers a classifier of persons is judged by, computed from predicted
// probabilities, so that the training loop, the evaluation report and the
// tests all use one definition. Conventions follow scikit-learn where it has
// one (noted below), so numbers can be checked against a notebook.
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace carotid {

// Probabilities are clipped to [kProbabilityEpsilon, 1 - kProbabilityEpsilon]
// before the log in the losses, so one confident mistake gives a large but
// finite loss (the clip Keras uses).
constexpr double kProbabilityEpsilon = 1e-7;

struct BinaryMetrics {
  int64_t count = 0;
  // The confusion matrix at the threshold: predicted positive when
  // p >= threshold.
  int64_t tp = 0, fp = 0, tn = 0, fn = 0;
  double loss = 0;      // mean binary cross-entropy of the clipped probabilities
  double accuracy = 0;  // (tp + tn) / count
  // Mean of sensitivity and specificity over the classes present in the
  // labels (with one class present, that class's recall), as scikit-learn.
  double balanced_accuracy = 0;
  double precision = 0;  // tp / (tp + fp); 0 when nothing is predicted positive
  // tp / (tp + fn); 0 without positives. scikit-learn's recall of class 1,
  // named as clinicians and model.threshold's rules name it.
  double sensitivity = 0;
  double specificity = 0;  // tn / (tn + fp); 0 without negatives
  double f1 = 0;           // 2PR / (P + R); 0 when P + R is 0
  // ROC-AUC, the probability that a random positive scores above a random
  // negative, ties counting one half (Mann-Whitney U with average ranks).
  // NaN when the labels hold one class only (it is undefined then; scikit-
  // learn raises) or when a probability is NaN.
  double auc = 0;
  // Calibration of P(class 1) (metrics/calibration.h): expected calibration
  // error over 15 equal-width bins, and the Brier score. NaN with a NaN
  // probability. `loss` is the negative log-likelihood.
  double ece = 0;
  double brier = 0;

  // Every figure as (name, value) in a fixed order, the name being the
  // field's: what metric logs, test reports and the cv tables show. A new
  // figure is a field above and a row in classifier_metrics.cpp's table.
  std::vector<std::pair<std::string, double>> named() const;
  // named()'s figures that the decision threshold sets (not the loss, the
  // AUC or the counts): what a report gives at a chosen threshold.
  std::vector<std::pair<std::string, double>> decided() const;
};

// Which way a figure of named() is better, as train.best_mode says it:
// "min" for the loss and the calibration errors (ece, brier), "" for the
// counts (tp, fp, tn, fn, count), which say nothing alone, "max" for the rest.
std::string figure_mode(const std::string& figure);

// `prob_positive[i]` is the predicted probability that example i is class 1;
// `labels[i]` is 0 or 1. A NaN probability (a diverged model) is predicted
// negative and makes loss and AUC NaN rather than failing the run. Throws
// std::invalid_argument for no examples, sizes that differ, a label other
// than 0 or 1, or a probability outside [0, 1] (logits passed by mistake).
BinaryMetrics binary_metrics(const std::vector<double>& prob_positive, const std::vector<int64_t>& labels,
                             double threshold = 0.5);

// The ROC-AUC part of binary_metrics on its own (same rules).
double roc_auc(const std::vector<double>& prob_positive, const std::vector<int64_t>& labels);

struct MulticlassMetrics {
  int64_t count = 0;
  int64_t num_classes = 0;
  // confusion[true][predicted]; predicted = the class of highest probability
  // (the lowest such class on ties).
  std::vector<std::vector<int64_t>> confusion;
  double loss = 0;  // mean cross-entropy, -log p[true class] clipped
  double accuracy = 0;
  double balanced_accuracy = 0;  // mean recall over the classes present in the labels
  // One-vs-rest ROC-AUC per class (NaN for a class absent from the labels or
  // present alone) and their mean over the classes where it is defined
  // (NaN when there is none): scikit-learn's multi_class="ovr", average="macro".
  std::vector<double> auc_per_class;
  double macro_auc = 0;
  // Top-label calibration (metrics/calibration.h): the highest probability
  // of each example against whether its class is the label.
  double ece = 0;
  double brier = 0;

  std::vector<std::pair<std::string, double>> named() const;
};

// `probs[i]` holds example i's probability for each of `num_classes`
// classes (a softmax); labels are 0..num_classes-1. Same NaN rules and
// std::invalid_argument cases as binary_metrics, and rows of the wrong width.
MulticlassMetrics multiclass_metrics(const std::vector<std::vector<double>>& probs, const std::vector<int64_t>& labels,
                                     int64_t num_classes);

// Image predictions turned into person predictions: each person's
// probabilities are the mean of its images'. Persons appear in the order of
// their first image.
struct PersonScores {
  std::vector<std::string> persons;
  std::vector<std::vector<double>> probs;  // per person, per class (width of the input rows)
  std::vector<int64_t> labels;
  std::vector<int64_t> image_counts;

  // probs[i][1] for every person: the input of binary_metrics.
  std::vector<double> positive() const;
};

// `person_of_image[i]`, `probs[i]` and `labels[i]` describe image i. Throws
// std::invalid_argument when the sizes or row widths differ, or when images of
// one person carry different labels.
PersonScores aggregate_by_person(const std::vector<std::string>& person_of_image,
                                 const std::vector<std::vector<double>>& probs, const std::vector<int64_t>& labels);

// The binary case: `prob_positive[i]` for image i becomes rows {1 - p, p}.
PersonScores aggregate_by_person(const std::vector<std::string>& person_of_image,
                                 const std::vector<double>& prob_positive, const std::vector<int64_t>& labels);

}  // namespace carotid
