#include "app/test_report.h"

#include <torch/torch.h>

#include <filesystem>
#include <fstream>
#include <iomanip>
#include <nlohmann/json.hpp>
#include <sstream>

#include "metrics/classifier_metrics.h"
#include "metrics/roc_curve.h"
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
  Level level{std::move(name), std::move(probs), std::move(labels), {}, {}};
  level.confusion = confusion_of(level.probs, level.labels, classes);
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

void write_text(const std::string& path, const std::string& text) {
  tandem::replace_atomically(path, [&](const std::string& temp) {
    std::ofstream out(temp);
    out << text;
    if (!out.flush()) throw std::runtime_error(temp + ": write failed");
  });
}

std::string tics(const std::vector<std::string>& names) {
  std::string s = "(";
  for (size_t k = 0; k < names.size(); ++k)
    s += (k ? ", " : "") + tandem::gnuplot_quoted(names[k]) + " " + std::to_string(k);
  return s + ")";
}

// Both figures from one gnuplot run, drawn aside and renamed into `dir`.
// Returns the PNGs written.
std::vector<fs::path> draw_figures(const fs::path& dir, const Level& persons, const Level& images,
                                   const std::vector<std::string>& names) {
  tandem::TempDir tmp(dir, "report");
  const fs::path matrix = tmp.path() / "confusion.dat";
  {
    std::ofstream out(matrix);
    for (const auto& row : persons.confusion) {
      for (size_t k = 0; k < row.size(); ++k) out << (k ? " " : "") << row[k];
      out << "\n";
    }
  }
  const auto k = std::to_string(names.size());
  std::string s = "set terminal pngcairo size 640,560 noenhanced\n";
  s += "set output " + tandem::gnuplot_quoted((tmp.path() / "confusion_matrix.png").string()) + "\n";
  s += "set title 'Test set, persons: confusion matrix'\nset xlabel 'predicted'\nset ylabel 'true'\n";
  s += "set xtics " + tics(names) + "\nset ytics " + tics(names) + "\n";
  s += "set xrange [-0.5:" + k + "-0.5]\nset yrange [" + k + "-0.5:-0.5]\n";
  s += "set palette defined (0 '#ffffff', 1 '#2b6cb0')\nset cbrange [0:*]\nunset key\n";
  s += "plot " + tandem::gnuplot_quoted(matrix.string()) +
       " matrix with image, '' matrix using 1:2:(sprintf('%d', $3)) with labels font ',16'\n";
  std::vector<std::string> made = {"confusion_matrix.png"};
  if (!persons.roc.empty() && !images.roc.empty()) {
    for (const Level* level : {&persons, &images}) {
      std::ofstream out(tmp.path() / (level->name + "_roc.dat"));
      for (const auto& p : level->roc) out << p.fpr << " " << p.tpr << "\n";
    }
    s += "reset\nset terminal pngcairo size 640,560 noenhanced\n";
    s += "set output " + tandem::gnuplot_quoted((tmp.path() / "roc_curve.png").string()) + "\n";
    s += "set title 'Test set: ROC curve'\nset xlabel 'false positive rate'\n"
         "set ylabel 'true positive rate'\nset xrange [0:1]\nset yrange [0:1]\nset size square\n"
         "set grid\nset key bottom right\n";
    char auc[64];
    std::string plot = "plot x with lines dt 2 lc 'gray' title 'chance'";
    for (const Level* level : {&persons, &images}) {
      std::snprintf(auc, sizeof auc, " (AUC %.3f)", area_under(level->roc));
      plot += ", " + tandem::gnuplot_quoted((tmp.path() / (level->name + "_roc.dat")).string()) +
              " using 1:2 with lines lw 2 title " + tandem::gnuplot_quoted(level->name + auc);
    }
    s += plot + "\n";
    made.push_back("roc_curve.png");
  }
  const fs::path script = tmp.path() / "report.gp";
  std::ofstream(script) << s << "unset output\n";
  tandem::run_gnuplot(script.string(), (tmp.path() / "gnuplot.log").string());
  std::vector<fs::path> written;
  for (const auto& file : made) {
    fs::rename(tmp.path() / file, dir / file);
    written.push_back(dir / file);
  }
  return written;
}

nlohmann::json level_json(const Level& level, const tandem::Metrics& metrics, const std::string& prefix) {
  nlohmann::json j;
  j["count"] = level.labels.size();
  for (const auto& [k, v] : metrics)
    if (k.rfind(prefix, 0) == 0) j[k.substr(prefix.size())] = std::isnan(v) ? nlohmann::json() : nlohmann::json(v);
  j["confusion_matrix"] = level.confusion;
  if (!level.roc.empty()) {
    nlohmann::json roc = nlohmann::json::array();
    for (const auto& p : level.roc) roc.push_back({{"fpr", p.fpr}, {"tpr", p.tpr}, {"threshold", p.threshold}});
    j["roc_curve"] = roc;
  }
  return j;
}

}  // namespace

tandem::Metrics write_test_report(const std::string& dir_name, const ReportInputs& in) {
  const fs::path dir(dir_name);
  const int64_t classes = static_cast<int64_t>(in.class_names.size());
  const auto metrics = classification_metrics(in.rows, in.samples, in.persons);
  const auto probs = table_rows(in.rows.at("prob"));
  const auto label_t = in.rows.at("label").to(at::kLong).contiguous();
  const std::vector<int64_t> labels(label_t.data_ptr<int64_t>(), label_t.data_ptr<int64_t>() + label_t.numel());
  const auto sample_t = in.rows.at("sample").to(at::kLong).contiguous();
  std::vector<std::string> person_of;
  for (int64_t i = 0; i < sample_t.numel(); ++i)
    person_of.push_back(in.persons.at(in.samples.at(sample_t.data_ptr<int64_t>()[i]).person));
  const auto scores = aggregate_by_person(person_of, probs, labels);

  const Level images = make_level("images", probs, labels, classes);
  const Level persons = make_level("persons", scores.probs, scores.labels, classes);

  nlohmann::json report;
  report["model"] = in.model;
  report["classes"] = in.class_names;
  report["loss"] = metrics.at("loss");
  report["images"] = level_json(images, metrics, "image_");
  report["persons"] = level_json(persons, metrics, "person_");
  write_text((dir / "test_report.json").string(), report.dump(2) + "\n");
  write_text((dir / "confusion_matrix.txt").string(),
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
