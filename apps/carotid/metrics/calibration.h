#pragma once
// Whether a predicted probability can be read as a frequency: of the persons
// given 0.8, about 80% should have the disease. scikit-learn's definitions,
// so a notebook can check the figures: the reliability bins are
// sklearn.calibration.calibration_curve's (strategy "uniform", 15 bins) and
// the Brier score its brier_score_loss. The negative log-likelihood is the
// metrics' `loss` (classifier_metrics.h), not repeated here.
#include <cstdint>
#include <vector>

namespace carotid {

// Equal-width bins on [0, 1]: bin i holds (i/15, (i+1)/15], the first also
// 0, as scikit-learn bins (numpy.searchsorted of the inner edges, side
// "left": a probability on an edge goes to the bin below it). The edges are
// numpy's linspace(0, 1, 16), k * (1/15), so one on an edge lands where
// scikit-learn puts it.
constexpr int kReliabilityBins = 15;

struct ReliabilityBin {
  int64_t count = 0;              // examples whose confidence is in the bin
  double mean_confidence = 0;     // their mean confidence; 0 for an empty bin
  double observed_frequency = 0;  // the share of them whose outcome is 1; 0 for an empty bin
};

struct Calibration {
  // Expected calibration error: over the bins, |mean_confidence -
  // observed_frequency| weighted by the bin's share of the examples. 0 is
  // calibrated; an over-confident model has confidence above frequency.
  double ece = 0;
  double brier = 0;  // mean of (confidence - outcome)^2: 0 perfect, 0.25 a constant 0.5
  std::vector<ReliabilityBin> bins;  // kReliabilityBins, empty ones included
};

// `confidence[i]` in [0, 1] and `outcome[i]` (0 or 1) of example i. Two
// classes: P(class 1) and the label. More: the top class's probability and
// whether it is the label (top-label calibration). A NaN confidence (a
// diverged model) makes ece and brier NaN and counts in no bin. Throws
// std::invalid_argument for no examples, sizes that differ, a confidence outside [0, 1]
// or an outcome other than 0 or 1.
Calibration calibration(const std::vector<double>& confidence, const std::vector<int64_t>& outcome);

// The same for rows of class probabilities (a softmax each) and their
// labels: two classes, of P(class 1); more, of the top class's probability
// (the lowest class on ties, as the confusion matrix predicts); a row with
// a NaN counts as a NaN confidence.
Calibration calibration_of_rows(const std::vector<std::vector<double>>& probs, const std::vector<int64_t>& labels);

}  // namespace carotid
