#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "tandem/error.h"
#include "tandem/obs/metrics_series.h"
#include "tandem/obs/plot.h"
#include "../test_support.h"

namespace fs = std::filesystem;

namespace {

using PlotTest = tandem::testing::TempDirTest;
using tandem::UsageError;
using tandem::testing::message_of;

void write_file(const fs::path& path, const std::string& text) {
  fs::create_directories(path.parent_path());
  std::ofstream(path) << text;
}

bool on_path(const std::string& program) {
  const char* path = std::getenv("PATH");
  std::istringstream dirs(path ? path : "");
  for (std::string dir; std::getline(dirs, dir, ':');)
    if (!dir.empty() && ::access((fs::path(dir) / program).c_str(), X_OK) == 0) return true;
  return false;
}

bool is_png(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  char head[8] = {};
  in.read(head, sizeof head);
  return in && std::string(head, 8) == std::string("\x89PNG\r\n\x1a\n", 8);
}

// PATH set for one test, restored after it.
class PathOverride {
 public:
  explicit PathOverride(const std::string& value) {
    if (const char* old = std::getenv("PATH")) old_ = old;
    ::setenv("PATH", value.c_str(), 1);
  }
  ~PathOverride() { ::setenv("PATH", old_.c_str(), 1); }

 private:
  std::string old_;
};

const char* kMetrics = R"({"step":1,"loss":4.5,"lr":0.0001,"grad_norm":3.1,"ms":120.0,"tokens_per_s":8000.0})"
                       "\n"
                       R"({"step":2,"loss":3.9,"lr":0.0002,"grad_norm":2.5,"ms":110.0,"tokens_per_s":8500.0})"
                       "\n"
                       R"({"step":3,"loss":null,"lr":0.0003,"grad_norm":2.0,"ms":111.0,"tokens_per_s":8400.0})"
                       "\n"
                       R"({"step":3,"eval_loss":3.7,"eval_rouge1":0.21})"
                       "\n"
                       R"({"step":4,"loss":3.2,"lr":0.0003,"grad_norm":1.8,"ms":109.0,"tokens_per_s":8600.0})"
                       "\n";

TEST_F(PlotTest, SeriesAreOneFieldEachSkippingNullsAndText) {
  write_file(dir_ / "metrics.jsonl", std::string(kMetrics) + R"({"note":"no step, no points"})"
                                                             "\n");
  const auto series = tandem::read_metric_series((dir_ / "metrics.jsonl").string());
  ASSERT_EQ(series.at("loss").size(), 3u);
  EXPECT_EQ(series.at("loss")[2].step, 4);
  EXPECT_EQ(series.at("loss")[2].value, 3.2);
  ASSERT_EQ(series.at("eval_loss").size(), 1u);
  EXPECT_EQ(series.at("eval_loss")[0].step, 3);
  EXPECT_EQ(series.count("note"), 0u);
  EXPECT_EQ(series.count("step"), 0u);
}

TEST_F(PlotTest, AResumedRunReplacesThePointsItLogsAgain) {
  write_file(dir_ / "metrics.jsonl",
             "{\"step\":1,\"loss\":5}\n{\"step\":2,\"loss\":4}\n{\"step\":3,\"loss\":3}\n"
             "{\"step\":2,\"loss\":4.1}\n{\"step\":3,\"loss\":3.1}\n");
  const auto loss = tandem::read_metric_series((dir_ / "metrics.jsonl").string()).at("loss");
  ASSERT_EQ(loss.size(), 3u);
  EXPECT_EQ(loss[1].value, 4.1);
  EXPECT_EQ(loss[2].value, 3.1);
}

TEST_F(PlotTest, ALastLineStillBeingWrittenIsLeftOut) {
  write_file(dir_ / "metrics.jsonl", "{\"step\":1,\"loss\":5}\n{\"step\":2,\"lo");
  EXPECT_EQ(tandem::read_metric_series((dir_ / "metrics.jsonl").string()).at("loss").size(), 1u);
}

TEST_F(PlotTest, AMalformedLineIsNamedByFileAndLine) {
  write_file(dir_ / "metrics.jsonl", "{\"step\":1,\"loss\":5}\n\n{\"step\":2,loss}\n{\"step\":3}\n");
  const auto message = message_of<UsageError>([&] { tandem::plot_run(dir_.string()); });
  EXPECT_NE(message.find((dir_ / "metrics.jsonl").string() + ":3:"), std::string::npos) << message;
  EXPECT_NE(message.find("{\"step\":2,loss}"), std::string::npos) << message;
}

TEST_F(PlotTest, ALineThatIsNotAnObjectIsAnError) {
  write_file(dir_ / "metrics.jsonl", "{\"step\":1,\"loss\":5}\n[1,2]\n");
  const auto message = message_of<UsageError>([&] { tandem::plot_run(dir_.string()); });
  EXPECT_NE(message.find("metrics.jsonl:2:"), std::string::npos) << message;
}

TEST_F(PlotTest, AMissingMetricsFileIsAUsageError) {
  const auto message = message_of<UsageError>([&] { tandem::plot_run(path("nope")); });
  EXPECT_NE(message.find("nope/metrics.jsonl"), std::string::npos) << message;
}

TEST_F(PlotTest, NothingToPlotIsAUsageError) {
  write_file(dir_ / "metrics.jsonl", "{\"step\":1,\"ms\":5}\n");
  const auto message = message_of<UsageError>([&] { tandem::plot_run(dir_.string()); });
  EXPECT_NE(message.find("nothing to plot"), std::string::npos) << message;
}

TEST_F(PlotTest, WithoutGnuplotTheErrorSaysWhatToInstall) {
  write_file(dir_ / "metrics.jsonl", kMetrics);
  PathOverride empty_path(path("no-programs-here"));
  const auto message = message_of<std::runtime_error>([&] { tandem::plot_run(dir_.string()); });
  EXPECT_NE(message.find("gnuplot-nox"), std::string::npos) << message;
}

TEST_F(PlotTest, DrawsLossLrThroughputGradNormAndEvalCharts) {
  if (!on_path("gnuplot")) GTEST_SKIP() << "gnuplot is not installed (apt-get install gnuplot-nox)";
  write_file(dir_ / "run" / "metrics.jsonl", kMetrics);
  const auto written = tandem::plot_run((dir_ / "run").string());
  const auto plots = dir_ / "run" / "plots";
  for (const char* name : {"loss.png", "lr.png", "throughput.png", "grad_norm.png", "eval_rouge1.png"})
    EXPECT_TRUE(is_png(plots / name)) << name;
  EXPECT_EQ(written.size(), 5u);
  // Nothing but the charts is left behind in the run directory.
  EXPECT_EQ(std::distance(fs::directory_iterator(plots), fs::directory_iterator()), 5);
}

TEST_F(PlotTest, CommandLineTakesRunDirAndOut) {
  if (!on_path("gnuplot")) GTEST_SKIP() << "gnuplot is not installed (apt-get install gnuplot-nox)";
  write_file(dir_ / "run" / "metrics.jsonl", "{\"step\":1,\"loss\":2}\n{\"step\":2,\"loss\":1}\n");
  const std::string run = (dir_ / "run").string(), out = path("pictures");
  const char* argv[] = {"tandem-plot", run.c_str(), "--out", out.c_str()};
  std::ostringstream printed;
  EXPECT_EQ(tandem::plot_command(4, const_cast<char**>(argv), printed), 0);
  EXPECT_TRUE(is_png(fs::path(out) / "loss.png"));
  EXPECT_NE(printed.str().find("loss.png"), std::string::npos);
}

TEST(PlotCommand, BadArgumentsAreUsageErrors) {
  std::ostringstream printed;
  const char* none[] = {"tandem-plot"};
  EXPECT_NE(message_of<UsageError>([&] {
              tandem::plot_command(1, const_cast<char**>(none), printed);
            }).find("usage: tandem-plot RUN_DIR"),
            std::string::npos);
  const char* unknown[] = {"tandem-plot", "run", "--colour"};
  EXPECT_NE(
      message_of<UsageError>([&] { tandem::plot_command(3, const_cast<char**>(unknown), printed); }).find("--colour"),
      std::string::npos);
  const char* help[] = {"tandem-plot", "--help"};
  EXPECT_EQ(tandem::plot_command(2, const_cast<char**>(help), printed), 0);
  EXPECT_NE(printed.str().find("usage:"), std::string::npos);
}

}  // namespace
