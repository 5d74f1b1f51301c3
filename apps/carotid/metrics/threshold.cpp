#include "metrics/threshold.h"

#include <algorithm>
#include <cstdlib>

#include "metrics/roc_curve.h"
#include "tandem/error.h"

namespace carotid {

ThresholdRule parse_threshold_rule(const std::string& text, const std::string& key) {
  ThresholdRule rule;
  rule.text = text;
  const std::string prefix = "sensitivity=";
  auto number = [&](const std::string& s, double& out) {
    char* end = nullptr;
    out = std::strtod(s.c_str(), &end);
    return !s.empty() && *end == '\0';
  };
  if (text == "youden") return rule;
  if (text.rfind(prefix, 0) == 0) {
    rule.kind = ThresholdRule::Kind::sensitivity;
    if (number(text.substr(prefix.size()), rule.value) && rule.value > 0 && rule.value <= 1) return rule;
  } else {
    rule.kind = ThresholdRule::Kind::fixed;
    if (number(text, rule.value) && rule.value > 0 && rule.value < 1) return rule;
  }
  throw tandem::UsageError(key + " = '" + text +
                           "': expected youden, sensitivity=S with S in (0, 1], or a threshold in (0, 1)");
}

double choose_threshold(const ThresholdRule& rule, const std::vector<double>& prob_positive,
                        const std::vector<int64_t>& labels) {
  if (rule.kind == ThresholdRule::Kind::fixed) return rule.value;
  const bool both = std::count(labels.begin(), labels.end(), 1) > 0 && std::count(labels.begin(), labels.end(), 0) > 0;
  if (!both) return 0.5;
  const auto curve = roc_curve(prob_positive, labels);
  // The first point is the curve's start (nothing predicted positive), its
  // threshold above every score: never a useful choice.
  double best = curve.at(1).threshold, best_j = -2;
  for (size_t i = 1; i < curve.size(); ++i) {
    const RocPoint& p = curve[i];
    if (rule.kind == ThresholdRule::Kind::sensitivity) {
      if (p.tpr >= rule.value - 1e-12) return p.threshold;
      continue;
    }
    // Strictly, and by more than rounding (2/3 - 0 against 1 - 1/3 differ in
    // the last bit): on ties the earlier, higher threshold stays.
    if (p.tpr - p.fpr > best_j + 1e-12) {
      best_j = p.tpr - p.fpr;
      best = p.threshold;
    }
  }
  return best;
}

int64_t decided_class(const std::vector<double>& row, double threshold) {
  if (row.size() == 2) return row[1] >= threshold ? 1 : 0;
  return std::max_element(row.begin(), row.end()) - row.begin();
}

}  // namespace carotid
