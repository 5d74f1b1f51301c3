#include "tandem/obs/metrics_series.h"

#include <fstream>
#include <nlohmann/json.hpp>

#include "tandem/error.h"

namespace tandem {
namespace {

bool blank(const std::string& line) { return line.find_first_not_of(" \t\r") == std::string::npos; }

std::string excerpt(const std::string& line) {
  constexpr size_t kMax = 60;
  return line.size() <= kMax ? line : line.substr(0, kMax) + "...";
}

void add(std::vector<MetricPoint>& points, double step, double value) {
  while (!points.empty() && points.back().step >= step) points.pop_back();
  points.push_back({step, value});
}

}  // namespace

MetricSeries read_metric_series(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw UsageError(path + ": no such file (is this a run directory of a tandem program?)");
  MetricSeries series;
  int line_no = 0;
  for (std::string line; std::getline(in, line);) {
    ++line_no;
    if (blank(line)) continue;
    const bool unterminated = in.eof();
    const auto row = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (row.is_discarded() && unterminated) break;
    if (row.is_discarded())
      throw UsageError(path + ":" + std::to_string(line_no) + ": not valid JSON: " + excerpt(line));
    if (!row.is_object())
      throw UsageError(path + ":" + std::to_string(line_no) +
                       ": expected one JSON object per line, got: " + excerpt(line));
    const auto step = row.find("step");
    if (step == row.end() || !step->is_number()) continue;
    for (const auto& [key, value] : row.items()) {
      if (key == "step" || !value.is_number()) continue;
      add(series[key], step->get<double>(), value.get<double>());
    }
  }
  if (in.bad()) throw std::runtime_error(path + ": read failed");
  return series;
}

}  // namespace tandem
