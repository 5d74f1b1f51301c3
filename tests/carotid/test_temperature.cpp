// Temperature scaling (metrics/temperature.h): the fit against what it must
// be on made-up logits; scipy's minimiser is the reference in
// tests/peers/calibration_vs_sklearn.py.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <string>
#include <vector>

#include "metrics/calibration.h"
#include "metrics/temperature.h"
#include "tandem/error.h"

namespace {

using carotid::fit_temperature;
using carotid::nll_at_temperature;

// Labels drawn from softmax(truth); the logits handed over are truth x scale.
struct Drawn {
  at::Tensor logits, labels;
};
Drawn drawn(int64_t n, double scale) {
  torch::manual_seed(3);
  const at::Tensor truth = torch::randn({n, 3}, torch::kDouble) * 1.5;
  return {truth * scale, torch::multinomial(torch::softmax(truth, 1), 1).squeeze(1)};
}

double image_ece(const at::Tensor& logits, const at::Tensor& labels, double t) {
  const at::Tensor p = torch::softmax(logits / t, 1).contiguous();
  std::vector<std::vector<double>> rows;
  for (int64_t i = 0; i < p.size(0); ++i) rows.emplace_back(p[i].data_ptr<double>(), p[i].data_ptr<double>() + 3);
  const at::Tensor y = labels.contiguous();
  return carotid::calibration_of_rows(rows,
                                      std::vector<int64_t>(y.data_ptr<int64_t>(), y.data_ptr<int64_t>() + y.numel()))
      .ece;
}

TEST(Temperature, OverConfidentLogitsGetTheirScaleBackAndALowerEce) {
  const Drawn d = drawn(20000, 3.0);  // three times too sure
  const double t = fit_temperature(d.logits, d.labels);
  EXPECT_NEAR(t, 3.0, 0.15);
  EXPECT_LT(image_ece(d.logits, d.labels, t), 0.5 * image_ece(d.logits, d.labels, 1.0));
  // The minimum: the NLL rises either side.
  const double at = nll_at_temperature(d.logits, d.labels, t);
  EXPECT_LT(at, nll_at_temperature(d.logits, d.labels, t * 1.001));
  EXPECT_LT(at, nll_at_temperature(d.logits, d.labels, t / 1.001));
}

TEST(Temperature, CalibratedLogitsStayNearOne) {
  const Drawn d = drawn(20000, 1.0);
  EXPECT_NEAR(fit_temperature(d.logits, d.labels), 1.0, 0.05);
}

TEST(Temperature, SeparatedImagesWantTheLowestTemperature) {
  // Every label's logit ahead by 2: the NLL falls as T does, down to the bound.
  const at::Tensor logits = torch::tensor({2.0, 0.0, 0.0, 2.0}, torch::kDouble).view({2, 2});
  EXPECT_EQ(fit_temperature(logits, torch::tensor({0, 1}, torch::kLong)), carotid::kLowestTemperature);
  // Every label's logit behind: the highest, the probabilities nearest even.
  EXPECT_EQ(fit_temperature(logits, torch::tensor({1, 0}, torch::kLong)), carotid::kHighestTemperature);
}

TEST(Temperature, RowsAtATemperatureKeepTheirArgmaxAndLogits) {
  const at::Tensor logits = torch::tensor({{2.0f, 0.0f}, {0.0f, 1.0f}});
  const tandem::EvalRows rows = carotid::at_temperature({{"logit", logits}, {"label", torch::tensor({0, 0})}}, 2.0);
  EXPECT_TRUE(rows.at("logit").equal(logits));
  EXPECT_TRUE(rows.at("pred").equal(torch::tensor({0, 1}, torch::kLong)));
  EXPECT_NEAR(rows.at("prob")[0][0].item<double>(), 1.0 / (1.0 + std::exp(-1.0)), 1e-6);  // softmax of (1, 0)
  EXPECT_NEAR(rows.at("loss")[1].item<double>(), std::log(1.0 + std::exp(0.5)), 1e-6);
}

TEST(Temperature, TheKeyTakesFitNoneOrAPositiveNumber) {
  using Kind = carotid::TemperatureRule::Kind;
  EXPECT_EQ(carotid::parse_temperature_rule("fit", "k").kind, Kind::fit);
  EXPECT_EQ(carotid::parse_temperature_rule("none", "k").kind, Kind::none);
  const auto fixed = carotid::parse_temperature_rule("1.5", "k");
  EXPECT_EQ(fixed.kind, Kind::fixed);
  EXPECT_EQ(fixed.value, 1.5);
  for (const std::string bad : {"0", "-1", "hot", "", "1.5x"}) {
    try {
      carotid::parse_temperature_rule(bad, "calibrate.temperature");
      ADD_FAILURE() << bad << " was taken";
    } catch (const tandem::UsageError& e) {
      EXPECT_NE(std::string(e.what()).find(
                    "calibrate.temperature must be \"fit\", \"none\" or a number above 0, got \"" + bad + "\""),
                std::string::npos)
          << e.what();
    }
  }
}

}  // namespace
