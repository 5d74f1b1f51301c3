#include "app/test_report.h"

#include <torch/torch.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iomanip>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "metrics/calibration.h"
#include "metrics/classifier_metrics.h"
#include "metrics/roc_curve.h"
#include "metrics/temperature.h"
#include "tandem/data/csv.h"
#include "tandem/error.h"
#include "tandem/io/atomic_file.h"
#include "tandem/io/temp_dir.h"
#include "tandem/obs/gnuplot.h"
#include "tandem/obs/log.h"
#include "tandem/obs/tensorboard.h"

namespace carotid {
namespace fs = std::filesystem;
using Matrix = std::vector<std::vector<int64_t>>;

namespace {

struct Level {
  std::string name;  // "images" or "persons"
  std::vector<std::vector<double>> probs;
  std::vector<int64_t> labels;
  Matrix confusion;
  std::vector<RocPoint> roc;  // two classes with both present only
  Calibration calibration;
};

// Rows true class, columns predicted; for two classes predicted positive at
// p >= 0.5, as the metrics count it.
Matrix confusion_of(const std::vector<std::vector<double>>& probs, const std::vector<int64_t>& labels,
                    int64_t classes) {
  if (classes == 2) {
    std::vector<double> positive;
    for (const auto& row : probs) positive.push_back(row[1]);
    const auto m = binary_metrics(positive, labels);
    return {{m.tn, m.fp}, {m.fn, m.tp}};
  }
  return multiclass_metrics(probs, labels, classes).confusion;
}

Level make_level(std::string name, std::vector<std::vector<double>> probs, std::vector<int64_t> labels,
                 int64_t classes) {
  Level level{std::move(name), std::move(probs), std::move(labels), {}, {}, {}};
  level.confusion = confusion_of(level.probs, level.labels, classes);
  level.calibration = calibration_of_rows(level.probs, level.labels);
  const bool both = std::count(level.labels.begin(), level.labels.end(), 1) > 0 &&
                    std::count(level.labels.begin(), level.labels.end(), 0) > 0;
  if (classes == 2 && both) {
    std::vector<double> positive;
    for (const auto& row : level.probs) positive.push_back(row[1]);
    level.roc = roc_curve(positive, level.labels);
  }
  return level;
}

std::string confusion_text(const Level& level, const std::vector<std::string>& names) {
  size_t width = 9;
  for (const auto& n : names) width = std::max(width, n.size() + 2);
  std::ostringstream out;
  out << level.name << " (rows: true class, columns: predicted)\n" << std::setw(width) << "";
  for (const auto& n : names) out << std::setw(width) << n;
  out << "\n";
  for (size_t t = 0; t < names.size(); ++t) {
    out << std::setw(width) << names[t];
    for (int64_t v : level.confusion[t]) out << std::setw(width) << v;
    out << "\n";
  }
  return out.str();
}

std::string tics(const std::vector<std::string>& names) {
  std::string s = "(";
  for (size_t k = 0; k < names.size(); ++k)
    s += (k ? ", " : "") + tandem::gnuplot_quoted(names[k]) + " " + std::to_string(k);
  return s + ")";
}

// The gnuplot script of the persons' confusion matrix, its data written
// into `tmp`.
std::string confusion_script(const fs::path& tmp, const Level& persons, const std::vector<std::string>& names) {
  const fs::path matrix = tmp / "confusion.dat";
  std::ostringstream out;
  for (const auto& row : persons.confusion) {
    for (size_t k = 0; k < row.size(); ++k) out << (k ? " " : "") << row[k];
    out << "\n";
  }
  tandem::write_bytes_atomically(matrix.string(), out.str());
  const auto k = std::to_string(names.size());
  std::string s = "set terminal pngcairo size 640,560 noenhanced\n";
  s += "set output " + tandem::gnuplot_quoted((tmp / "confusion_matrix.png").string()) + "\n";
  s += "set title 'Test set, persons: confusion matrix'\nset xlabel 'predicted'\nset ylabel 'true'\n";
  s += "set xtics " + tics(names) + "\nset ytics " + tics(names) + "\n";
  s += "set xrange [-0.5:" + k + "-0.5]\nset yrange [" + k + "-0.5:-0.5]\n";
  s += "set palette defined (0 '#ffffff', 1 '#2b6cb0')\nset cbrange [0:*]\nunset key\n";
  s += "plot " + tandem::gnuplot_quoted(matrix.string()) +
       " matrix with image, '' matrix using 1:2:(sprintf('%d', $3)) with labels font ',16'\n";
  return s;
}

// The gnuplot script of both levels' ROC curves, their data written into `tmp`.
std::string roc_script(const fs::path& tmp, const Level& persons, const Level& images) {
  for (const Level* level : {&persons, &images}) {
    std::ostringstream out;
    for (const auto& p : level->roc) out << p.fpr << " " << p.tpr << "\n";
    tandem::write_bytes_atomically((tmp / (level->name + "_roc.dat")).string(), out.str());
  }
  std::string s = "reset\nset terminal pngcairo size 640,560 noenhanced\n";
  s += "set output " + tandem::gnuplot_quoted((tmp / "roc_curve.png").string()) + "\n";
  s += "set title 'Test set: ROC curve'\nset xlabel 'false positive rate'\n"
       "set ylabel 'true positive rate'\nset xrange [0:1]\nset yrange [0:1]\nset size square\n"
       "set grid\nset key bottom right\n";
  char auc[64];
  std::string plot = "plot x with lines dt 2 lc 'gray' title 'chance'";
  for (const Level* level : {&persons, &images}) {
    std::snprintf(auc, sizeof auc, " (AUC %.3f)", area_under(level->roc));
    plot += ", " + tandem::gnuplot_quoted((tmp / (level->name + "_roc.dat")).string()) +
            " using 1:2 with lines lw 2 title " + tandem::gnuplot_quoted(level->name + auc);
  }
  return s + plot + "\n";
}

// The gnuplot script of a level's reliability diagram (each non-empty bin's
// observed frequency against its mean probability, with its count), its
// data written into `tmp`, drawn as `png`.
std::string reliability_script(const fs::path& tmp, const Level& level, const std::string& png, bool binary) {
  const fs::path data = tmp / (level.name + "_reliability.dat");
  std::ostringstream out;
  out.precision(17);
  for (const ReliabilityBin& bin : level.calibration.bins)
    if (bin.count > 0) out << bin.mean_confidence << " " << bin.observed_frequency << " " << bin.count << "\n";
  tandem::write_bytes_atomically(data.string(), out.str());
  char title[160];
  std::snprintf(title, sizeof title, "Test set, %s: reliability (ECE %.3f, Brier %.3f)", level.name.c_str(),
                level.calibration.ece, level.calibration.brier);
  std::string s = "reset\nset terminal pngcairo size 640,560 noenhanced\n";
  s += "set output " + tandem::gnuplot_quoted((tmp / png).string()) + "\n";
  s += "set title " + tandem::gnuplot_quoted(title) + "\n";
  s += binary ? "set xlabel 'mean predicted probability of class 1'\nset ylabel 'observed frequency of class 1'\n"
              : "set xlabel 'mean probability of the predicted class'\nset ylabel 'observed accuracy'\n";
  s += "set xrange [0:1]\nset yrange [0:1.05]\nset size square\nset grid\nset key top left\n";
  s += "plot x with lines dt 2 lc 'gray' title 'calibrated', " + tandem::gnuplot_quoted(data.string()) +
       " using 1:2 with linespoints lw 2 pt 7 title 'bins of 1/15', '' using 1:2:(sprintf('%d', $3)) with labels "
       "offset 0,1 notitle\n";
  return s;
}

// Every figure from one gnuplot run, drawn aside and renamed into `dir`.
// Returns the PNGs written.
std::vector<fs::path> draw_figures(const fs::path& dir, const Level& persons, const Level& images,
                                   const std::vector<std::string>& names) {
  tandem::TempDir tmp(dir, "report");
  std::string s = confusion_script(tmp.path(), persons, names);
  std::vector<std::string> made = {"confusion_matrix.png", "reliability.png", "reliability_person.png"};
  const bool binary = names.size() == 2;
  s += reliability_script(tmp.path(), images, "reliability.png", binary);
  s += reliability_script(tmp.path(), persons, "reliability_person.png", binary);
  if (!persons.roc.empty() && !images.roc.empty()) {
    s += roc_script(tmp.path(), persons, images);
    made.push_back("roc_curve.png");
  }
  const fs::path script = tmp.path() / "report.gp";
  tandem::write_bytes_atomically(script.string(), s + "unset output\n");
  tandem::run_gnuplot(script.string(), (tmp.path() / "gnuplot.log").string());
  std::vector<fs::path> written;
  for (const auto& file : made) {
    fs::rename(tmp.path() / file, dir / file);
    written.push_back(dir / file);
  }
  return written;
}

nlohmann::json level_json(const Level& level, const tandem::Metrics& metrics, const std::string& prefix,
                          double threshold) {
  nlohmann::json j;
  j["count"] = level.labels.size();
  for (const auto& [k, v] : metrics)
    if (k.rfind(prefix, 0) == 0) j[k.substr(prefix.size())] = std::isnan(v) ? nlohmann::json() : nlohmann::json(v);
  j["confusion_matrix"] = level.confusion;
  // The reliability diagram's bins (metrics/calibration.h), empty ones included.
  nlohmann::json bins = nlohmann::json::array();
  for (size_t b = 0; b < level.calibration.bins.size(); ++b) {
    const ReliabilityBin& bin = level.calibration.bins[b];
    bins.push_back({{"bin", b}, {"count", bin.count}, {"mean_probability", bin.mean_confidence},
                    {"observed_frequency", bin.observed_frequency}});
  }
  j["reliability"] = bins;
  if (!level.roc.empty()) {
    nlohmann::json roc = nlohmann::json::array();
    for (const auto& p : level.roc) roc.push_back({{"fpr", p.fpr}, {"tpr", p.tpr}, {"threshold", p.threshold}});
    j["roc_curve"] = roc;
  }
  if (level.probs.front().size() == 2) {
    std::vector<double> positive;
    for (const auto& row : level.probs) positive.push_back(row[1]);
    const BinaryMetrics m = binary_metrics(positive, level.labels, threshold);
    nlohmann::json at = decided_json(m);
    at["threshold"] = threshold;
    at["confusion_matrix"] = {{m.tn, m.fp}, {m.fn, m.tp}};
    j["at_threshold"] = at;
  }
  return j;
}

void write_predictions(const fs::path& path, const ReportInputs& in) {
  std::vector<std::string> header = {"image", "person", "label", "loss"};
  for (const auto& name : in.class_names) header.push_back("prob_" + name);
  const auto probs = table_rows(in.rows.at("prob"));
  const auto sample = in.rows.at("sample").to(at::kLong).contiguous();
  const auto loss = in.rows.at("loss").to(at::kDouble).contiguous();
  auto number = [](double x) {
    char text[32];
    std::snprintf(text, sizeof text, "%.17g", x);  // read back exactly
    return std::string(text);
  };
  std::vector<std::vector<std::string>> rows;
  for (int64_t i = 0; i < sample.numel(); ++i) {
    const Sample& s = in.samples.at(sample.data_ptr<int64_t>()[i]);
    std::vector<std::string> row = {in.images.empty() ? "" : in.images.at(s.image), in.persons.at(s.person),
                                    std::to_string(s.label), number(loss.data_ptr<double>()[i])};
    for (double p : probs[i]) row.push_back(number(p));
    rows.push_back(std::move(row));
  }
  tandem::write_csv(path.string(), header, rows);
}

}  // namespace

nlohmann::json decided_json(const BinaryMetrics& m, const std::string& prefix) {
  nlohmann::json j;
  for (const auto& [name, value] : m.decided()) j[prefix + name] = value;
  return j;
}

ReportInputs read_test_predictions(const std::string& path) {
  if (!fs::is_regular_file(path)) throw tandem::UsageError(path + ": no such file");
  const tandem::CsvTable table = tandem::read_csv(path);
  const size_t image_col = table.column("image"), person_col = table.column("person");
  const size_t label_col = table.column("label"), loss_col = table.column("loss");
  std::vector<size_t> prob_cols;
  ReportInputs in;
  for (size_t c = 0; c < table.header.size(); ++c)
    if (table.header[c].rfind("prob_", 0) == 0) {
      prob_cols.push_back(c);
      in.class_names.push_back(table.header[c].substr(5));
    }
  if (prob_cols.size() < 2) throw tandem::UsageError(path + ": expected a prob_<class> column per class");
  auto number = [&](size_t r, size_t c) {
    const std::string& text = table.rows[r][c];
    char* end = nullptr;
    const double x = std::strtod(text.c_str(), &end);
    if (text.empty() || *end != '\0')
      throw tandem::UsageError(path + ": line " + std::to_string(table.lines[r]) + ": " + table.header[c] + " '" +
                               text + "' is not a number");
    return x;
  };
  std::map<std::string, int64_t> person_index;
  std::vector<float> probs;
  std::vector<int64_t> labels;
  std::vector<double> losses;
  for (size_t r = 0; r < table.rows.size(); ++r) {
    const std::string& person = table.rows[r][person_col];
    const auto [it, added] = person_index.emplace(person, static_cast<int64_t>(in.persons.size()));
    if (added) in.persons.push_back(person);
    const double label = number(r, label_col);
    if (label < 0 || label >= static_cast<double>(prob_cols.size()) || label != std::floor(label))
      throw tandem::UsageError(path + ": line " + std::to_string(table.lines[r]) + ": label '" +
                               table.rows[r][label_col] + "' is not a class index");
    labels.push_back(static_cast<int64_t>(label));
    losses.push_back(number(r, loss_col));
    for (const size_t c : prob_cols) probs.push_back(static_cast<float>(number(r, c)));
    in.images.push_back(table.rows[r][image_col]);
    in.samples.push_back({static_cast<int64_t>(r), it->second, labels.back()});
  }
  const auto n = static_cast<int64_t>(labels.size());
  in.rows["prob"] = torch::tensor(probs).view({n, static_cast<int64_t>(prob_cols.size())});
  in.rows["label"] = torch::tensor(labels, torch::kLong);
  in.rows["loss"] = torch::tensor(losses, torch::kDouble);
  in.rows["sample"] = torch::arange(n, torch::kLong);
  return in;
}

tandem::Metrics write_test_report(const std::string& dir_name, const ReportInputs& in) {
  const fs::path dir(dir_name);
  const int64_t classes = static_cast<int64_t>(in.class_names.size());
  const auto metrics = classification_metrics(in.rows, in.samples, in.persons);
  const auto probs = table_rows(in.rows.at("prob"));
  const auto label_t = in.rows.at("label").to(at::kLong).contiguous();
  const std::vector<int64_t> labels(label_t.data_ptr<int64_t>(), label_t.data_ptr<int64_t>() + label_t.numel());
  const auto scores = person_scores(in.rows, in.samples, in.persons);

  const Level images = make_level("images", probs, labels, classes);
  const Level persons = make_level("persons", scores.probs, scores.labels, classes);

  nlohmann::json report;
  report["model"] = in.model;
  report["classes"] = in.class_names;
  report["loss"] = metrics.at("loss");
  report["threshold"] = in.threshold;
  report["images"] = level_json(images, metrics, "image_", in.threshold);
  report["persons"] = level_json(persons, metrics, "person_", in.threshold);
  report["temperature"] = in.temperature;
  if (in.rows.count("logit") && in.temperature != 1.0) {
    // The same rows at temperature 1: what calibrating moved. The image
    // AUC stays; person figures (means of images' probabilities) can move.
    nlohmann::json before;
    for (const auto& [k, v] : classification_metrics(at_temperature(in.rows, 1.0), in.samples, in.persons))
      for (const char* figure : {"_auc", "_ece", "_brier", "_loss"})
        if (k.size() > std::strlen(figure) && k.compare(k.size() - std::strlen(figure), std::string::npos, figure) == 0)
          before[k] = std::isnan(v) ? nlohmann::json() : nlohmann::json(v);
    report["before_temperature"] = before;
  }
  tandem::write_bytes_atomically((dir / "test_report.json").string(), report.dump(2) + "\n");
  write_predictions(dir / "test_predictions.csv", in);
  tandem::write_bytes_atomically(
      (dir / "confusion_matrix.txt").string(),
      confusion_text(persons, in.class_names) + "\n" + confusion_text(images, in.class_names));
  try {
    const auto figures = draw_figures(dir, persons, images, in.class_names);
    if (in.tensorboard) {
      tandem::TensorBoardWriter tb((dir / "tb").string());
      for (const auto& png : figures) tb.png_file("test/" + png.stem().string(), in.step, png.string());
    }
  } catch (const std::exception& e) {
    tandem::log::warn("test report: no figures: ", e.what());
  }
  tandem::Metrics out;
  for (const auto& [k, v] : metrics)
    if (k.rfind("person_", 0) == 0) out[k] = v;
  return out;
}

}  // namespace carotid
