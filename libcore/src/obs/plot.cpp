#include "tandem/obs/plot.h"

#include <cctype>
#include <filesystem>
#include <map>
#include <sstream>

#include "tandem/error.h"
#include "tandem/io/atomic_file.h"
#include "tandem/io/temp_dir.h"
#include "tandem/obs/gnuplot.h"
#include "tandem/obs/metrics_series.h"

namespace tandem {
namespace fs = std::filesystem;
namespace {

struct Line {
  std::string field, title;
};

struct Chart {
  std::string file, title, ylabel;
  std::vector<Line> lines;
};

bool is_eval(const std::string& field) { return field.rfind("eval_", 0) == 0; }
bool is_loss(const std::string& field) { return field.find("loss") != std::string::npos; }

// Field names come from the apps' JSON keys; a file name must stay one plain name.
std::string file_name_for(const std::string& field) {
  std::string name = field;
  for (char& c : name)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '-') c = '_';
  return name + ".png";
}

std::vector<Chart> charts_for(const MetricSeries& series) {
  const auto has = [&](const std::string& field) { return series.count(field) > 0; };
  std::vector<Chart> charts;
  Chart loss{"loss.png", "loss", "loss", {}};
  if (has("loss")) loss.lines.push_back({"loss", "train"});
  for (const auto& entry : series)
    if (is_eval(entry.first) && is_loss(entry.first))
      loss.lines.push_back({entry.first, entry.first == "eval_loss" ? "eval" : entry.first});
  if (!loss.lines.empty()) charts.push_back(loss);
  if (has("lr")) charts.push_back({"lr.png", "learning rate", "lr", {{"lr", "lr"}}});
  // Token throughput is the figure language-model users compare; samples/s the rest.
  if (has("tokens_per_s"))
    charts.push_back({"throughput.png", "throughput", "tokens/s", {{"tokens_per_s", "tokens/s"}}});
  else if (has("samples_per_s"))
    charts.push_back({"throughput.png", "throughput", "samples/s", {{"samples_per_s", "samples/s"}}});
  if (has("grad_norm")) charts.push_back({"grad_norm.png", "gradient norm", "grad norm", {{"grad_norm", "grad norm"}}});
  // Other eval metrics (accuracy, ROUGE) each get their own chart: their scales differ.
  for (const auto& entry : series)
    if (is_eval(entry.first) && !is_loss(entry.first))
      charts.push_back({file_name_for(entry.first), entry.first, entry.first, {{entry.first, "eval"}}});
  return charts;
}

void write_data(const fs::path& path, const std::vector<MetricPoint>& points) {
  std::ostringstream out;
  out.precision(10);
  for (const auto& p : points) out << p.step << ' ' << p.value << '\n';
  write_bytes_atomically(path.string(), out.str());
}

// One gnuplot run draws every chart; each is written inside `dir`.
std::string script_for(const std::vector<Chart>& charts, const MetricSeries& series,
                       const std::map<std::string, fs::path>& data, const fs::path& dir) {
  // noenhanced: enhanced text would print the "_" of eval_loss as a subscript.
  std::string s =
      "set terminal pngcairo size 960,540 noenhanced\n"
      "set grid\nset xlabel 'step'\nset format y '%g'\n";
  for (const Chart& chart : charts) {
    s += "set output " + gnuplot_quoted((dir / chart.file).string()) + "\n";
    s += "set title " + gnuplot_quoted(chart.title) + "\nset ylabel " + gnuplot_quoted(chart.ylabel) + "\n";
    s += chart.lines.size() > 1 ? "set key top right\n" : "unset key\n";
    s += "plot ";
    for (size_t i = 0; i < chart.lines.size(); ++i) {
      const Line& line = chart.lines[i];
      // Evaluations are few and far apart: points show where they were taken.
      const bool points = is_eval(line.field) || series.at(line.field).size() == 1;
      s += (i ? ", " : "") + gnuplot_quoted(data.at(line.field).string()) + " using 1:2 with " +
           (points ? "linespoints pt 7 ps 0.8" : "lines lw 1.5") + " title " + gnuplot_quoted(line.title);
    }
    s += "\n";
  }
  return s + "unset output\n";
}

}  // namespace

std::vector<std::string> plot_run(const std::string& run_dir, const std::string& out_dir) {
  const fs::path metrics = fs::path(run_dir) / "metrics.jsonl";
  const MetricSeries series = read_metric_series(metrics.string());
  const auto charts = charts_for(series);
  if (charts.empty())
    throw UsageError(metrics.string() +
                     ": nothing to plot yet: no step has loss, lr, grad_norm, samples_per_s, "
                     "tokens_per_s or eval_* values");
  const fs::path out = out_dir.empty() ? fs::path(run_dir) / "plots" : fs::path(out_dir);
  fs::create_directories(out);

  // Drawn aside, then renamed over the old ones: a viewer never sees half a PNG.
  TempDir tmp(out, "plot");
  std::map<std::string, fs::path> data;
  for (const Chart& chart : charts)
    for (const Line& line : chart.lines) {
      if (data.count(line.field)) continue;
      const fs::path file = tmp.path() / (std::to_string(data.size()) + ".dat");
      write_data(file, series.at(line.field));
      data.emplace(line.field, file);
    }
  const fs::path script = tmp.path() / "plot.gp";
  write_bytes_atomically(script.string(), script_for(charts, series, data, tmp.path()));
  run_gnuplot(script.string(), (tmp.path() / "gnuplot.log").string());

  std::vector<std::string> written;
  for (const Chart& chart : charts) {
    fs::rename(tmp.path() / chart.file, out / chart.file);
    written.push_back((out / chart.file).string());
  }
  return written;
}

}  // namespace tandem
