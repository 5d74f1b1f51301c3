#include "metrics/temperature.h"

#include <ATen/ATen.h>

#include <cmath>
#include <cstdlib>
#include <stdexcept>

#include "tandem/error.h"
#include "tandem/train/classification.h"

namespace carotid {

TemperatureRule parse_temperature_rule(const std::string& text, const std::string& key) {
  if (text == "fit") return {TemperatureRule::Kind::fit, 1.0, text};
  if (text == "none") return {TemperatureRule::Kind::none, 1.0, text};
  char* end = nullptr;
  const double value = std::strtod(text.c_str(), &end);
  if (!text.empty() && end == text.c_str() + text.size() && std::isfinite(value) && value > 0)
    return {TemperatureRule::Kind::fixed, value, text};
  throw tandem::UsageError(key + " must be \"fit\", \"none\" or a number above 0, got \"" + text + "\"");
}

namespace {

struct Rows {
  at::Tensor z, own;  // [N, C] float64; each row's logit of its label, [N]
};

Rows rows_of(const at::Tensor& logits, const at::Tensor& labels) {
  if (logits.dim() != 2 || logits.size(0) == 0 || labels.dim() != 1 || labels.size(0) != logits.size(0))
    throw std::invalid_argument("fit_temperature: logits [N, C] and labels [N] with N > 0");
  Rows r;
  r.z = logits.to(at::kDouble);
  r.own = r.z.gather(1, labels.to(at::kLong).unsqueeze(1)).squeeze(1);
  return r;
}

// d/db of the mean NLL at b = 1 / T.
double slope(const Rows& r, double b) {
  const at::Tensor expected = (at::softmax(r.z * b, 1) * r.z).sum(1);
  return (expected - r.own).mean().item<double>();
}

}  // namespace

double nll_at_temperature(const at::Tensor& logits, const at::Tensor& labels, double temperature) {
  const Rows r = rows_of(logits, labels);
  const at::Tensor scaled = r.z / temperature;
  return (at::logsumexp(scaled, 1) - r.own / temperature).mean().item<double>();
}

tandem::EvalRows at_temperature(const tandem::EvalRows& rows, double temperature) {
  tandem::EvalRows out = rows;
  for (auto& [key, t] : tandem::classification_rows(rows.at("logit") / temperature, rows.at("label")))
    out[key] = std::move(t);
  return out;
}

double fit_temperature(const at::Tensor& logits, const at::Tensor& labels) {
  const Rows r = rows_of(logits, labels);
  double low = 1.0 / kHighestTemperature, high = 1.0 / kLowestTemperature;
  if (slope(r, low) >= 0) return kHighestTemperature;
  if (slope(r, high) <= 0) return kLowestTemperature;
  // The slope's sign change lies in [low, high]; halve it until the two
  // ends are neighbouring doubles.
  for (int i = 0; i < 200; ++i) {
    const double mid = 0.5 * (low + high);
    if (mid <= low || mid >= high) break;
    (slope(r, mid) < 0 ? low : high) = mid;
  }
  return 1.0 / (0.5 * (low + high));
}

}  // namespace carotid
