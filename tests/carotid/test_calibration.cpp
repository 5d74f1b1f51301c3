// Calibration figures against values worked out by hand (scikit-learn's
// definitions: tests/peers/calibration_vs_sklearn.py checks them there).
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <string>
#include <stdexcept>
#include <vector>

#include "metrics/calibration.h"
#include "metrics/classifier_metrics.h"
#include "metrics/temperature.h"

namespace {

using carotid::calibration;

TEST(Calibration, OneExampleABin) {
  // Bins of 1/15: 0.05 -> 0, 0.15 -> 2, 0.85 -> 12, 0.9 -> 13, 0.95 -> 14.
  const auto c = calibration({0.05, 0.15, 0.85, 0.95, 0.9}, {0, 1, 1, 1, 0});
  ASSERT_EQ(c.bins.size(), 15u);
  for (int b : {0, 2, 12, 13, 14}) EXPECT_EQ(c.bins[b].count, 1) << "bin " << b;
  EXPECT_EQ(c.bins[1].count, 0);
  EXPECT_DOUBLE_EQ(c.bins[13].mean_confidence, 0.9);
  EXPECT_DOUBLE_EQ(c.bins[13].observed_frequency, 0.0);
  // Each bin is one example: the mean of |p - y| = (0.05+0.85+0.15+0.05+0.9)/5.
  EXPECT_NEAR(c.ece, 0.4, 1e-15);
  EXPECT_NEAR(c.brier, (0.0025 + 0.7225 + 0.0225 + 0.0025 + 0.81) / 5, 1e-15);
}

TEST(Calibration, ABinComparesItsMeanWithItsFrequency) {
  // All in (10/15, 11/15]: 0.7 said, 3 of 4 positive.
  const auto c = calibration({0.7, 0.7, 0.7, 0.7}, {1, 1, 1, 0});
  EXPECT_EQ(c.bins[10].count, 4);
  EXPECT_DOUBLE_EQ(c.bins[10].observed_frequency, 0.75);
  EXPECT_NEAR(c.ece, 0.05, 1e-15);
  EXPECT_NEAR(c.brier, (3 * 0.09 + 0.49) / 4, 1e-15);
}

TEST(Calibration, EdgesAsScikitLearnPlacesThem) {
  // An edge belongs to the bin it closes; 0 to the first, 1 to the last.
  EXPECT_EQ(calibration({1.0 / 15}, {0}).bins[0].count, 1);
  EXPECT_EQ(calibration({std::nextafter(1.0 / 15, 1.0)}, {0}).bins[1].count, 1);
  EXPECT_EQ(calibration({0.0}, {0}).bins[0].count, 1);
  EXPECT_EQ(calibration({1.0}, {1}).bins[14].count, 1);
  EXPECT_EQ(calibration({14 * (1.0 / 15)}, {1}).bins[13].count, 1);  // numpy's edge
  EXPECT_DOUBLE_EQ(calibration({1.0, 0.0}, {1, 0}).ece, 0.0);
}

TEST(Calibration, NaNMakesTheFiguresNaN) {
  const auto c = calibration({std::numeric_limits<double>::quiet_NaN(), 0.5}, {1, 0});
  EXPECT_TRUE(std::isnan(c.ece));
  EXPECT_TRUE(std::isnan(c.brier));
  EXPECT_EQ(c.bins[7].count, 1);
}

TEST(Calibration, ARowWithANaNIsNaN) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const auto c = carotid::calibration_of_rows({{0.7, 0.2, 0.1}, {0.6, nan, 0.2}}, {0, 0});
  EXPECT_TRUE(std::isnan(c.ece));
  EXPECT_TRUE(std::isnan(c.brier));
}

TEST(Calibration, BadInputIsRefused) {
  EXPECT_THROW(calibration({}, {}), std::invalid_argument);
  EXPECT_THROW(calibration({0.5}, {0, 1}), std::invalid_argument);
  EXPECT_THROW(calibration({0.5}, {2}), std::invalid_argument);
  EXPECT_THROW(calibration({1.5}, {1}), std::invalid_argument);
}

TEST(Calibration, EveryReportCarriesIt) {
  const auto binary = carotid::binary_metrics({0.7, 0.7, 0.7, 0.7}, {1, 1, 1, 0});
  EXPECT_NEAR(binary.ece, 0.05, 1e-15);
  bool named = false;
  for (const auto& [name, value] : binary.named()) named |= name == "brier" && std::abs(value - 0.19) < 1e-15;
  EXPECT_TRUE(named) << "binary_metrics' named() has no brier of 0.19";
  // Top label: 0.7 right, 0.62 wrong.
  const auto multi = carotid::multiclass_metrics({{0.7, 0.2, 0.1}, {0.1, 0.62, 0.28}}, {0, 2}, 3);
  EXPECT_NEAR(multi.ece, 0.5 * 0.3 + 0.5 * 0.62, 1e-15);
  EXPECT_NEAR(multi.brier, (0.09 + 0.3844) / 2, 1e-15);
}

// train.best_metric = "eval_person_ece" keeps the model of the smallest.
TEST(Calibration, ErrorsAreBetterSmaller) {
  EXPECT_EQ(carotid::figure_mode("ece"), "min");
  EXPECT_EQ(carotid::figure_mode("brier"), "min");
  EXPECT_EQ(carotid::figure_mode("loss"), "min");
  EXPECT_EQ(carotid::figure_mode("auc"), "max");
  EXPECT_EQ(carotid::figure_mode("tp"), "");
}

// A peer's CSV: a row an example, its label and then its values.
struct LabelledRows {
  std::vector<int64_t> labels;
  std::vector<std::vector<double>> values;
};
LabelledRows read_labelled_rows(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error(path + ": cannot be read");
  LabelledRows rows;
  for (std::string line; std::getline(in, line);) {
    std::vector<double> row;
    for (size_t at = 0; at < line.size();) {
      size_t used = 0;
      row.push_back(std::stod(line.substr(at), &used));
      at += used + 1;
    }
    rows.labels.push_back(static_cast<int64_t>(row.front()));
    rows.values.emplace_back(row.begin() + 1, row.end());
  }
  return rows;
}

// tests/peers/calibration_vs_sklearn.py's input, WORK/binary.csv and
// WORK/multiclass.csv (probabilities), and what tandem makes of them,
// WORK/NAME.out: loss, ece, brier, then each bin's count, mean confidence
// and observed frequency; and WORK/logits.csv (logits), of which
// WORK/logits.out gives the fitted temperature and its NLL.
TEST(CalibrationPeer, WritesItsFigures) {
  const char* env = std::getenv("TANDEM_PEER_CALIBRATION_DIR");
  if (!env) GTEST_SKIP() << "run by tests/peers/calibration_vs_sklearn.py";
  const std::string dir = env;
  for (const std::string name : {"binary", "multiclass"}) {
    const LabelledRows rows = read_labelled_rows(dir + "/" + name + ".csv");
    const auto& probs = rows.values;
    const int64_t classes = static_cast<int64_t>(probs.front().size());
    const double loss =
        classes == 2 ? carotid::binary_metrics(carotid::PersonScores{{}, probs, {}, {}}.positive(), rows.labels).loss
                     : carotid::multiclass_metrics(probs, rows.labels, classes).loss;
    const auto c = carotid::calibration_of_rows(probs, rows.labels);
    std::ofstream out(dir + "/" + name + ".out");
    out.precision(17);
    out << loss << "\n" << c.ece << "\n" << c.brier << "\n";
    for (const auto& bin : c.bins)
      out << bin.count << " " << bin.mean_confidence << " " << bin.observed_frequency << "\n";
  }
  const LabelledRows rows = read_labelled_rows(dir + "/logits.csv");
  std::vector<double> flat;
  for (const auto& row : rows.values) flat.insert(flat.end(), row.begin(), row.end());
  const at::Tensor logits =
      torch::tensor(flat, torch::kDouble).view({-1, static_cast<int64_t>(rows.values.front().size())});
  const at::Tensor y = torch::tensor(rows.labels, torch::kLong);
  const double t = carotid::fit_temperature(logits, y);
  std::ofstream out(dir + "/logits.out");
  out.precision(17);
  out << t << "\n" << carotid::nll_at_temperature(logits, y, t) << "\n";
}

}  // namespace
