#pragma once
// The decision threshold on P(class 1) for two classes. 0.5 is rarely the
// right one when a class is rare (a quarter of the persons are positive in
// BreastMNIST): a model then calls almost everyone negative. So a rule picks
// it on the validation persons after training, it is stored in the model
// file, and predict and the test report use it.
#include <cstdint>
#include <string>
#include <vector>

namespace carotid {

struct ThresholdRule {
  enum class Kind { fixed, youden, sensitivity } kind = Kind::youden;
  double value = 0.5;  // the threshold (fixed) or the sensitivity to reach
  std::string text;    // as written, for logs
};

// "youden" (the point of the ROC curve that maximises sensitivity +
// specificity - 1), "sensitivity=S" with S in (0, 1] (the highest threshold
// whose sensitivity is at least S), or a number in (0, 1) used as it is.
// Throws tandem::UsageError naming `key` otherwise.
ThresholdRule parse_threshold_rule(const std::string& text, const std::string& key);

// The class decided for one row of probabilities: with two classes, class 1
// when its probability reaches `threshold`; with more, the most probable
// (the first of equals).
int64_t decided_class(const std::vector<double>& row, double threshold);

// The rule's threshold for these scores: predicted positive when p >= it.
// Ties between thresholds go to the highest. Without both classes in
// `labels` there is no curve to choose on: 0.5 (a fixed rule's own value).
double choose_threshold(const ThresholdRule& rule, const std::vector<double>& prob_positive,
                        const std::vector<int64_t>& labels);

}  // namespace carotid
