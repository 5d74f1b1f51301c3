#pragma once
// The ROC curve behind the AUC: for every distinct score taken as the
// threshold, from the highest down, the share of negatives and of positives
// scored at or above it. Drawn in the test report; its area is roc_auc().
#include <cstdint>
#include <vector>

namespace carotid {

struct RocPoint {
  double fpr = 0, tpr = 0;
  double threshold = 0;  // predicted positive when p >= threshold
};

// Starts at (0, 0) (threshold +inf, stored as 1 + the highest score) and ends
// at (1, 1); ties move both rates at once, as scikit-learn's roc_curve with
// drop_intermediate=false. Throws std::invalid_argument for sizes that differ,
// or labels that are not 0/1 or hold one class only.
std::vector<RocPoint> roc_curve(const std::vector<double>& prob_positive, const std::vector<int64_t>& labels);

// The trapezoidal area under the curve's points (equal to roc_auc()).
double area_under(const std::vector<RocPoint>& curve);

}  // namespace carotid
