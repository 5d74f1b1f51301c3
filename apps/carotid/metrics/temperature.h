#pragma once
// Temperature scaling (Guo et al. 2017, "On Calibration of Modern Neural
// Networks"): a network's probabilities are softmax(z / T) for one T > 0
// fitted on the validation images after training, which leaves every
// image's ranking (and so the image-level AUC and the argmax) as it was and
// makes the probabilities honest: an over-confident model gets T > 1. A
// person's probability is the mean of their images', so person-level
// figures and ensembles can move a little.
//
// The fit minimises the validation images' mean negative log-likelihood
// over b = 1 / T. That is convex in b (a log-sum-exp of terms linear in b,
// less a linear term), so its derivative, mean_i(E_softmax(b z_i)[z_i] -
// z_i[y_i]), rises with b and the minimum is where it crosses 0: found by
// bisection to the last bit of a double within T in [kLowest, kHighest],
// or at a bound when it does not cross there (a model that separates the
// validation images perfectly wants T -> 0).
#include <ATen/core/Tensor.h>

#include <string>

#include "tandem/train/task.h"

namespace carotid {

inline constexpr double kLowestTemperature = 0.01, kHighestTemperature = 100.0;

// calibrate.temperature: "fit", "none" (T = 1), or a number above 0.
struct TemperatureRule {
  enum class Kind { fit, none, fixed } kind = Kind::fit;
  double value = 1.0;        // fixed
  std::string text = "fit";  // as written, for logs
};
// Throws tandem::UsageError naming `key` for anything else.
TemperatureRule parse_temperature_rule(const std::string& text, const std::string& key);

// The T minimising the mean NLL of `labels` [N] (int64) under
// softmax(logits / T), `logits` [N, C]; throws std::invalid_argument for no
// rows or sizes that differ.
double fit_temperature(const at::Tensor& logits, const at::Tensor& labels);

// The mean negative log-likelihood at T: what the fit minimises.
double nll_at_temperature(const at::Tensor& logits, const at::Tensor& labels, double temperature);

// Evaluation rows at T: tandem::classification_rows of rows["logit"] / T
// and rows["label"], beside every other row of `rows` ("logit" kept).
tandem::EvalRows at_temperature(const tandem::EvalRows& rows, double temperature);

}  // namespace carotid
