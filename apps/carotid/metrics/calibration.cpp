#include "metrics/calibration.h"

#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

namespace carotid {
namespace {

// numpy.searchsorted(linspace(0, 1, 16)[1:-1], p): the number of inner
// edges below p.
int bin_of(double p) {
  const double step = 1.0 / kReliabilityBins;
  int bin = 0;
  while (bin < kReliabilityBins - 1 && static_cast<double>(bin + 1) * step < p) ++bin;
  return bin;
}

}  // namespace

Calibration calibration(const std::vector<double>& confidence, const std::vector<int64_t>& outcome) {
  if (confidence.empty()) throw std::invalid_argument("calibration of no examples");
  if (confidence.size() != outcome.size())
    throw std::invalid_argument("calibration: " + std::to_string(confidence.size()) + " confidences for " +
                                std::to_string(outcome.size()) + " outcomes");
  Calibration c;
  c.bins.resize(kReliabilityBins);
  std::vector<double> confidence_sum(kReliabilityBins, 0.0), outcome_sum(kReliabilityBins, 0.0);
  bool diverged = false;
  double squares = 0;
  for (size_t i = 0; i < confidence.size(); ++i) {
    const double p = confidence[i];
    if (outcome[i] != 0 && outcome[i] != 1)
      throw std::invalid_argument("calibration: outcome " + std::to_string(outcome[i]) + " of example " +
                                  std::to_string(i) + " is not 0 or 1");
    if (std::isnan(p)) {
      diverged = true;
      continue;
    }
    if (p < 0.0 || p > 1.0)
      throw std::invalid_argument("calibration: confidence " + std::to_string(p) + " of example " +
                                  std::to_string(i) + " is outside [0, 1]");
    const int b = bin_of(p);
    c.bins[b].count += 1;
    confidence_sum[b] += p;
    outcome_sum[b] += static_cast<double>(outcome[i]);
    squares += (p - static_cast<double>(outcome[i])) * (p - static_cast<double>(outcome[i]));
  }
  const double n = static_cast<double>(confidence.size());
  for (int b = 0; b < kReliabilityBins; ++b) {
    ReliabilityBin& bin = c.bins[b];
    if (bin.count == 0) continue;
    bin.mean_confidence = confidence_sum[b] / static_cast<double>(bin.count);
    bin.observed_frequency = outcome_sum[b] / static_cast<double>(bin.count);
    c.ece += static_cast<double>(bin.count) / n * std::abs(bin.mean_confidence - bin.observed_frequency);
  }
  c.brier = squares / n;
  if (diverged) c.ece = c.brier = std::numeric_limits<double>::quiet_NaN();
  return c;
}

Calibration calibration_of_rows(const std::vector<std::vector<double>>& probs, const std::vector<int64_t>& labels) {
  if (probs.size() != labels.size())
    throw std::invalid_argument("calibration: " + std::to_string(probs.size()) + " rows for " +
                                std::to_string(labels.size()) + " labels");
  std::vector<double> confidence;
  std::vector<int64_t> outcome;
  for (size_t i = 0; i < probs.size(); ++i) {
    const std::vector<double>& row = probs[i];
    if (row.size() < 2) throw std::invalid_argument("calibration: row " + std::to_string(i) + " has under 2 classes");
    if (row.size() == 2) {
      confidence.push_back(row[1]);
      outcome.push_back(labels[i]);
      continue;
    }
    size_t best = 0;
    bool diverged = false;
    for (size_t c = 0; c < row.size(); ++c) {
      diverged |= std::isnan(row[c]);
      if (row[c] > row[best] || (std::isnan(row[best]) && !std::isnan(row[c]))) best = c;
    }
    confidence.push_back(diverged ? std::numeric_limits<double>::quiet_NaN() : row[best]);
    outcome.push_back(static_cast<int64_t>(best) == labels[i]);
  }
  return calibration(confidence, outcome);
}

}  // namespace carotid
