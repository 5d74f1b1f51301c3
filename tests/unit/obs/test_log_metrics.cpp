#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <sstream>

#include "tandem/obs/log.h"
#include "tandem/obs/metrics.h"
#include "tandem/obs/progress.h"
#include "../test_support.h"

namespace fs = std::filesystem;

namespace {

using ObsTest = tandem::testing::TempDirTest;

std::vector<std::string> lines_of(const fs::path& p) {
  std::ifstream in(p);
  std::vector<std::string> out;
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

TEST_F(ObsTest, MetricsAreOneJsonObjectPerLineInFieldOrderAppendedAcrossWriters) {
  const auto path = dir_ / "run" / "metrics.jsonl";
  {
    tandem::MetricsWriter w(path.string());
    w.write({{"step", int64_t{1}}, {"loss", 2.5}, {"lr", 3e-4}, {"note", std::string("warm")}});
  }
  {
    // A resumed run opens the file again and must continue it.
    tandem::MetricsWriter w(path.string());
    w.write({{"step", int64_t{2}}, {"loss", std::numeric_limits<double>::quiet_NaN()}});
  }
  auto lines = lines_of(path);
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0], R"({"step":1,"loss":2.5,"lr":0.0003,"note":"warm"})");
  auto second = nlohmann::json::parse(lines[1]);
  EXPECT_EQ(second["step"], 2);
  EXPECT_TRUE(second["loss"].is_null());  // NaN is not JSON
}

TEST_F(ObsTest, MetricsCutALineLeftUnfinishedBeforeAppending) {
  // A run killed, or out of disk, mid-row: the resumed run's rows must not
  // continue the cut one.
  const auto path = dir_ / "metrics.jsonl";
  std::ofstream(path) << R"({"step":1,"loss":2.5})" << "\n" << R"({"step":2,"lo)";
  tandem::MetricsWriter(path.string()).write({{"step", int64_t{2}}, {"loss", 2.25}});
  EXPECT_EQ(lines_of(path), (std::vector<std::string>{R"({"step":1,"loss":2.5})", R"({"step":2,"loss":2.25})"}));
}

TEST_F(ObsTest, MetricsCutLongUnfinishedLinesAndFilesWithNoWholeLine) {
  // The last newline is looked for a block at a time: lines longer than a
  // block, and a file that is all one cut line, are cut too.
  const auto path = dir_ / "metrics.jsonl";
  const std::string whole = R"({"note":")" + std::string(9000, 'a') + R"("})";
  std::ofstream(path) << whole << "\n" << R"({"note":")" << std::string(10000, 'b');
  tandem::MetricsWriter(path.string()).write({{"step", int64_t{1}}});
  EXPECT_EQ(lines_of(path), (std::vector<std::string>{whole, R"({"step":1})"}));
  std::ofstream(path) << R"({"note":")" << std::string(5000, 'c');
  tandem::MetricsWriter(path.string()).write({{"step", int64_t{2}}});
  EXPECT_EQ(lines_of(path), (std::vector<std::string>{R"({"step":2})"}));
}

TEST(Obs, AFullDiskStopsMetricsNamingTheFileAndTheCause) {
  tandem::MetricsWriter w("/dev/full");  // every write fails with ENOSPC
  try {
    w.write({{"step", int64_t{1}}});
    FAIL() << "a write to a full disk passed";
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "/dev/full: cannot write: No space left on device");
  }
}

TEST(Obs, ALogFileOnAFullDiskSaysSoOnceAndTheRankLogsToTheConsole) {
  tandem::log::init(1);
  tandem::log::open_file("/dev/full");
  ::testing::internal::CaptureStderr();
  tandem::log::info("first");
  tandem::log::info("second");
  const std::string err = ::testing::internal::GetCapturedStderr();
  tandem::log::close_file();
  tandem::log::init(0);
  EXPECT_NE(err.find("/dev/full: cannot write (No space left on device); this rank logs to the console only"),
            std::string::npos)
      << err;
  EXPECT_EQ(err.find("cannot write", err.find("cannot write") + 1), std::string::npos) << "said twice: " << err;
  // A rank other than 0 writes info lines only to its file; with the file
  // gone they reach the console instead of being lost.
  EXPECT_NE(err.find("r1 INFO  first"), std::string::npos) << err;
  EXPECT_NE(err.find("r1 INFO  second"), std::string::npos) << err;
}

TEST(Progress, DurationsReadAsAPersonWouldWriteThem) {
  EXPECT_EQ(tandem::Progress::duration(44.6), "45s");
  EXPECT_EQ(tandem::Progress::duration(185), "3m05s");
  EXPECT_EQ(tandem::Progress::duration(7620), "2h07m");
}

TEST(Progress, PlainModePrintsEveryIntervalWithRateAndEta) {
  double now = 0;
  std::ostringstream out;
  tandem::Progress p("train", 100, out, /*redraw=*/false, 10.0, [&] { return now; });
  now = 5;
  p.update(10, "loss 2.00");  // first update always prints
  now = 9;
  p.update(18);  // within 10 s of the last line: silent
  now = 20;
  p.update(40, "loss 1.50");
  now = 50;
  p.update(100);  // the end always prints
  auto text = out.str();
  EXPECT_NE(text.find("train 10/100 (10.0%) 2.00/s elapsed 5s ETA 45s | loss 2.00\n"), std::string::npos) << text;
  EXPECT_EQ(text.find("18/100"), std::string::npos);
  EXPECT_NE(text.find("train 40/100 (40.0%) 2.00/s elapsed 20s ETA 30s | loss 1.50\n"), std::string::npos) << text;
  EXPECT_NE(text.find("train 100/100 (100.0%)"), std::string::npos);
  EXPECT_EQ(text.find('\r'), std::string::npos);
}

TEST(Progress, TerminalModeRedrawsInPlace) {
  double now = 0;
  std::ostringstream out;
  tandem::Progress p("eval", 4, out, /*redraw=*/true, 10.0, [&] { return now; });
  now = 1;
  p.update(1);
  now = 2;
  p.update(2);
  p.finish();
  auto text = out.str();
  EXPECT_EQ(text.front(), '\r');
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 1);
  EXPECT_EQ(text.back(), '\n');
}

TEST_F(ObsTest, LogOfEveryRankGoesToItsOwnFileWithTimeRankAndLevel) {
  const auto& dir = dir_;
  tandem::log::init(1);
  tandem::log::open_file((dir / "logs" / "rank-1.log").string());
  tandem::log::info("step ", 3, " done");
  tandem::log::warn("slow");
  tandem::log::close_file();
  tandem::log::init(0);
  auto lines = lines_of(dir / "logs" / "rank-1.log");
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_NE(lines[0].find(" r1 INFO  step 3 done"), std::string::npos) << lines[0];
  EXPECT_NE(lines[1].find(" r1 WARN  slow"), std::string::npos) << lines[1];
  EXPECT_EQ(lines[0][4], '-');  // starts with a date: 2026-11-21 ...
}

}  // namespace
