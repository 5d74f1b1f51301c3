#include "metrics/roc_curve.h"

#include <algorithm>
#include <numeric>
#include <stdexcept>

namespace carotid {

std::vector<RocPoint> roc_curve(const std::vector<double>& p, const std::vector<int64_t>& labels) {
  if (p.size() != labels.size()) throw std::invalid_argument("roc_curve: sizes differ");
  double positives = 0, negatives = 0;
  for (int64_t y : labels) {
    if (y != 0 && y != 1) throw std::invalid_argument("roc_curve: labels must be 0 or 1");
    (y ? positives : negatives) += 1;
  }
  if (positives == 0 || negatives == 0) throw std::invalid_argument("roc_curve: needs both classes");
  std::vector<size_t> order(p.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return p[a] > p[b]; });
  std::vector<RocPoint> curve = {{0, 0, p[order[0]] + 1}};
  double tp = 0, fp = 0;
  for (size_t k = 0; k < order.size(); ++k) {
    (labels[order[k]] ? tp : fp) += 1;
    if (k + 1 < order.size() && p[order[k + 1]] == p[order[k]]) continue;
    curve.push_back({fp / negatives, tp / positives, p[order[k]]});
  }
  return curve;
}

double area_under(const std::vector<RocPoint>& curve) {
  double area = 0;
  for (size_t k = 1; k < curve.size(); ++k)
    area += (curve[k].fpr - curve[k - 1].fpr) * (curve[k].tpr + curve[k - 1].tpr) / 2;
  return area;
}

}  // namespace carotid
