#include "metrics/classifier_metrics.h"

#include "metrics/calibration.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <vector>

namespace carotid {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

double ratio(int64_t num, int64_t den) { return den > 0 ? static_cast<double>(num) / static_cast<double>(den) : 0.0; }

double clipped_log(double p) { return std::log(std::clamp(p, kProbabilityEpsilon, 1.0 - kProbabilityEpsilon)); }

void check_probability(double p, size_t i) {
  if (!std::isnan(p) && (p < 0.0 || p > 1.0))
    throw std::invalid_argument("probability " + std::to_string(p) + " of example " + std::to_string(i) +
                                " is outside [0, 1]; pass probabilities, not logits");
}

// Mann-Whitney: AUC = (sum of the positives' ranks - P(P+1)/2) / (P N), with
// tied scores sharing the mean of their ranks, which counts each tied
// positive-negative pair as one half. `positive[i]` says which side i is on.
double rank_auc(const std::vector<double>& scores, const std::vector<bool>& positive) {
  int64_t n_pos = 0;
  for (bool p : positive) n_pos += p;
  const int64_t n_neg = static_cast<int64_t>(positive.size()) - n_pos;
  if (n_pos == 0 || n_neg == 0) return kNaN;
  for (double s : scores)
    if (std::isnan(s)) return kNaN;
  std::vector<size_t> order(scores.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return scores[a] < scores[b]; });
  double positive_rank_sum = 0;
  for (size_t start = 0; start < order.size();) {
    size_t end = start;
    while (end < order.size() && scores[order[end]] == scores[order[start]]) ++end;
    const double mean_rank = (static_cast<double>(start + 1) + static_cast<double>(end)) / 2.0;
    for (size_t k = start; k < end; ++k)
      if (positive[order[k]]) positive_rank_sum += mean_rank;
    start = end;
  }
  const double p = static_cast<double>(n_pos);
  return (positive_rank_sum - p * (p + 1) / 2.0) / (p * static_cast<double>(n_neg));
}

void check_binary(const std::vector<double>& probs, const std::vector<int64_t>& labels) {
  if (probs.empty()) throw std::invalid_argument("binary metrics of no examples");
  if (probs.size() != labels.size())
    throw std::invalid_argument("binary metrics: " + std::to_string(probs.size()) + " probabilities for " +
                                std::to_string(labels.size()) + " labels");
  for (size_t i = 0; i < probs.size(); ++i) {
    check_probability(probs[i], i);
    if (labels[i] != 0 && labels[i] != 1)
      throw std::invalid_argument("binary metrics: label " + std::to_string(labels[i]) + " of example " +
                                  std::to_string(i) + " is not 0 or 1");
  }
}

}  // namespace

std::string figure_mode(const std::string& figure) {
  for (const char* smaller : {"loss", "ece", "brier"})
    if (figure == smaller) return "min";
  for (const char* count : {"tp", "fp", "tn", "fn", "count"})
    if (figure == count) return "";
  return "max";
}

double roc_auc(const std::vector<double>& prob_positive, const std::vector<int64_t>& labels) {
  check_binary(prob_positive, labels);
  std::vector<bool> positive(labels.size());
  for (size_t i = 0; i < labels.size(); ++i) positive[i] = labels[i] == 1;
  return rank_auc(prob_positive, positive);
}

BinaryMetrics binary_metrics(const std::vector<double>& prob_positive, const std::vector<int64_t>& labels,
                             double threshold) {
  check_binary(prob_positive, labels);
  BinaryMetrics m;
  m.count = static_cast<int64_t>(labels.size());
  double loss_sum = 0;
  for (size_t i = 0; i < labels.size(); ++i) {
    const double p = prob_positive[i];
    const bool predicted = p >= threshold;  // false for NaN
    if (labels[i] == 1) {
      (predicted ? m.tp : m.fn) += 1;
      loss_sum -= std::isnan(p) ? kNaN : clipped_log(p);
    } else {
      (predicted ? m.fp : m.tn) += 1;
      loss_sum -= std::isnan(p) ? kNaN : clipped_log(1.0 - p);
    }
  }
  m.loss = loss_sum / static_cast<double>(m.count);
  m.accuracy = ratio(m.tp + m.tn, m.count);
  m.precision = ratio(m.tp, m.tp + m.fp);
  m.sensitivity = ratio(m.tp, m.tp + m.fn);
  m.specificity = ratio(m.tn, m.tn + m.fp);
  m.f1 = m.precision + m.sensitivity > 0 ? 2 * m.precision * m.sensitivity / (m.precision + m.sensitivity) : 0.0;
  const bool has_pos = m.tp + m.fn > 0, has_neg = m.tn + m.fp > 0;
  m.balanced_accuracy = has_pos && has_neg ? (m.sensitivity + m.specificity) / 2.0
                        : has_pos          ? m.sensitivity
                                           : m.specificity;
  m.auc = roc_auc(prob_positive, labels);
  const Calibration c = calibration(prob_positive, labels);
  m.ece = c.ece;
  m.brier = c.brier;
  return m;
}

namespace {

struct BinaryFigure {
  const char* name;
  bool decided;  // set by the threshold (BinaryMetrics::decided)
  double (*value)(const BinaryMetrics&);
};

const BinaryFigure kBinaryFigures[] = {
    {"loss", false, [](const BinaryMetrics& m) { return m.loss; }},
    {"accuracy", true, [](const BinaryMetrics& m) { return m.accuracy; }},
    {"balanced_accuracy", true, [](const BinaryMetrics& m) { return m.balanced_accuracy; }},
    {"precision", true, [](const BinaryMetrics& m) { return m.precision; }},
    {"sensitivity", true, [](const BinaryMetrics& m) { return m.sensitivity; }},
    {"specificity", true, [](const BinaryMetrics& m) { return m.specificity; }},
    {"f1", true, [](const BinaryMetrics& m) { return m.f1; }},
    {"auc", false, [](const BinaryMetrics& m) { return m.auc; }},
    {"ece", false, [](const BinaryMetrics& m) { return m.ece; }},
    {"brier", false, [](const BinaryMetrics& m) { return m.brier; }},
    {"tp", false, [](const BinaryMetrics& m) { return static_cast<double>(m.tp); }},
    {"fp", false, [](const BinaryMetrics& m) { return static_cast<double>(m.fp); }},
    {"tn", false, [](const BinaryMetrics& m) { return static_cast<double>(m.tn); }},
    {"fn", false, [](const BinaryMetrics& m) { return static_cast<double>(m.fn); }},
    {"count", false, [](const BinaryMetrics& m) { return static_cast<double>(m.count); }},
};

std::vector<std::pair<std::string, double>> binary_figures(const BinaryMetrics& m, bool decided_only) {
  std::vector<std::pair<std::string, double>> figures;
  for (const auto& f : kBinaryFigures)
    if (f.decided || !decided_only) figures.emplace_back(f.name, f.value(m));
  return figures;
}

// accuracy and balanced_accuracy from m.confusion.
void add_confusion_figures(MulticlassMetrics& m) {
  int64_t correct = 0;
  double recall_sum = 0;
  int64_t present = 0;
  for (size_t c = 0; c < m.confusion.size(); ++c) {
    correct += m.confusion[c][c];
    const int64_t row_total = std::accumulate(m.confusion[c].begin(), m.confusion[c].end(), int64_t{0});
    if (row_total > 0) {
      recall_sum += ratio(m.confusion[c][c], row_total);
      ++present;
    }
  }
  m.accuracy = ratio(correct, m.count);
  m.balanced_accuracy = present > 0 ? recall_sum / static_cast<double>(present) : 0.0;
}

// auc_per_class (class c against the rest) and macro_auc.
void add_one_vs_rest_auc(MulticlassMetrics& m, const std::vector<std::vector<double>>& probs,
                         const std::vector<int64_t>& labels) {
  double auc_sum = 0;
  int64_t defined = 0;
  std::vector<double> scores(probs.size());
  std::vector<bool> positive(probs.size());
  for (size_t c = 0; c < static_cast<size_t>(m.num_classes); ++c) {
    for (size_t i = 0; i < probs.size(); ++i) {
      scores[i] = probs[i][c];
      positive[i] = labels[i] == static_cast<int64_t>(c);
    }
    const double auc = rank_auc(scores, positive);
    m.auc_per_class.push_back(auc);
    if (!std::isnan(auc)) {
      auc_sum += auc;
      ++defined;
    }
  }
  m.macro_auc = defined > 0 ? auc_sum / static_cast<double>(defined) : kNaN;
}

}  // namespace

std::vector<std::pair<std::string, double>> BinaryMetrics::named() const { return binary_figures(*this, false); }

std::vector<std::pair<std::string, double>> BinaryMetrics::decided() const { return binary_figures(*this, true); }

MulticlassMetrics multiclass_metrics(const std::vector<std::vector<double>>& probs, const std::vector<int64_t>& labels,
                                     int64_t num_classes) {
  if (num_classes < 2) throw std::invalid_argument("multiclass metrics need 2 classes or more");
  if (probs.empty()) throw std::invalid_argument("multiclass metrics of no examples");
  if (probs.size() != labels.size())
    throw std::invalid_argument("multiclass metrics: " + std::to_string(probs.size()) + " rows of probabilities for " +
                                std::to_string(labels.size()) + " labels");
  const size_t k = static_cast<size_t>(num_classes);
  MulticlassMetrics m;
  m.count = static_cast<int64_t>(labels.size());
  m.num_classes = num_classes;
  m.confusion.assign(k, std::vector<int64_t>(k, 0));
  double loss_sum = 0;
  for (size_t i = 0; i < probs.size(); ++i) {
    if (probs[i].size() != k)
      throw std::invalid_argument("multiclass metrics: row " + std::to_string(i) + " has " +
                                  std::to_string(probs[i].size()) + " probabilities for " + std::to_string(k) +
                                  " classes");
    if (labels[i] < 0 || labels[i] >= num_classes)
      throw std::invalid_argument("multiclass metrics: label " + std::to_string(labels[i]) + " of example " +
                                  std::to_string(i) + " is not a class");
    size_t best = 0;
    for (size_t c = 0; c < k; ++c) {
      check_probability(probs[i][c], i);
      if (probs[i][c] > probs[i][best] || (std::isnan(probs[i][best]) && !std::isnan(probs[i][c]))) best = c;
    }
    const double p_true = probs[i][static_cast<size_t>(labels[i])];
    loss_sum -= std::isnan(p_true) ? kNaN : clipped_log(p_true);
    m.confusion[static_cast<size_t>(labels[i])][best] += 1;
  }
  m.loss = loss_sum / static_cast<double>(m.count);
  const Calibration c = calibration_of_rows(probs, labels);
  m.ece = c.ece;
  m.brier = c.brier;
  add_confusion_figures(m);
  add_one_vs_rest_auc(m, probs, labels);
  return m;
}

std::vector<std::pair<std::string, double>> MulticlassMetrics::named() const {
  return {{"loss", loss},
          {"accuracy", accuracy},
          {"balanced_accuracy", balanced_accuracy},
          {"auc", macro_auc},
          {"ece", ece},
          {"brier", brier},
          {"count", static_cast<double>(count)}};
}

std::vector<double> PersonScores::positive() const {
  std::vector<double> out;
  out.reserve(probs.size());
  for (const auto& row : probs) {
    if (row.size() < 2) throw std::invalid_argument("PersonScores::positive needs two classes");
    out.push_back(row[1]);
  }
  return out;
}

PersonScores aggregate_by_person(const std::vector<std::string>& person_of_image,
                                 const std::vector<std::vector<double>>& probs, const std::vector<int64_t>& labels) {
  if (person_of_image.size() != probs.size() || probs.size() != labels.size())
    throw std::invalid_argument("aggregate_by_person: " + std::to_string(person_of_image.size()) + " persons, " +
                                std::to_string(probs.size()) + " rows, " + std::to_string(labels.size()) + " labels");
  PersonScores scores;
  std::unordered_map<std::string, size_t> index;
  for (size_t i = 0; i < probs.size(); ++i) {
    if (!probs.empty() && probs[i].size() != probs[0].size())
      throw std::invalid_argument("aggregate_by_person: rows of different widths");
    const auto [it, added] = index.emplace(person_of_image[i], scores.persons.size());
    if (added) {
      scores.persons.push_back(person_of_image[i]);
      scores.probs.emplace_back(probs[i].size(), 0.0);
      scores.labels.push_back(labels[i]);
      scores.image_counts.push_back(0);
    } else if (scores.labels[it->second] != labels[i]) {
      throw std::invalid_argument("aggregate_by_person: images of person " + person_of_image[i] + " have labels " +
                                  std::to_string(scores.labels[it->second]) + " and " + std::to_string(labels[i]));
    }
    auto& sum = scores.probs[it->second];
    for (size_t c = 0; c < sum.size(); ++c) sum[c] += probs[i][c];
    scores.image_counts[it->second] += 1;
  }
  for (size_t p = 0; p < scores.persons.size(); ++p)
    for (double& v : scores.probs[p]) v /= static_cast<double>(scores.image_counts[p]);
  return scores;
}

PersonScores aggregate_by_person(const std::vector<std::string>& person_of_image,
                                 const std::vector<double>& prob_positive, const std::vector<int64_t>& labels) {
  std::vector<std::vector<double>> rows;
  rows.reserve(prob_positive.size());
  for (double p : prob_positive) rows.push_back({1.0 - p, p});
  return aggregate_by_person(person_of_image, rows, labels);
}

}  // namespace carotid
