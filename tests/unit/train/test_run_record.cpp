// The run record's contract (tandem/train/run_record.h): train.resume against
// the run folder, the best-model rule in both directions, early stopping's
// count, and what a checkpoint keeps of them.
#include "tandem/train/run_record.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "tandem/error.h"
#include "../test_support.h"

namespace tandem {
namespace {

class RunRecordTest : public testing::TempDirTest {
 protected:
  TrainKeys settings(const std::string& mode = "min", int64_t patience = 0, double delta = 0.0) {
    TrainKeys s;
    s.out_dir = path("run");
    s.best_mode = mode;
    s.early_stop_patience = patience;
    s.early_stop_min_delta = delta;
    return s;
  }
  // A checkpoint that holds `record`'s state at `step`.
  Checkpoint written(const RunRecord& record, int64_t step) {
    Checkpoint ckpt;
    ckpt.path = path("step.h5");
    ckpt.state["step"] = step;
    record.write(ckpt.state);
    return ckpt;
  }
};

TEST_F(RunRecordTest, AFreshRunResumesFromNothing) {
  const TrainKeys s = settings();
  RunRecord record(s, s.best_mode);
  EXPECT_FALSE(record.resume_from());
  EXPECT_FALSE(record.open_resume());
  EXPECT_EQ(record.start_step(), 0);
  EXPECT_EQ(record.saved_at(), -1);
}

TEST_F(RunRecordTest, ResumeNoneRefusesAFolderWithCheckpoints) {
  TrainKeys s = settings();
  std::filesystem::create_directories(path("run/checkpoints"));
  std::ofstream(path("run/checkpoints/step-00000004.h5")) << "x";
  s.resume = "none";
  const std::string message = testing::message_of<UsageError>([&] { RunRecord record(s, s.best_mode); });
  EXPECT_NE(message.find("already holds checkpoints"), std::string::npos) << message;
  EXPECT_NE(message.find("train.resume = \"auto\""), std::string::npos) << message;
  s.resume = "auto";
  EXPECT_EQ(*RunRecord(s, s.best_mode).resume_from(), path("run/checkpoints/step-00000004.h5"));
}

TEST_F(RunRecordTest, ResumeFromAMissingFileNamesIt) {
  TrainKeys s = settings();
  s.resume = path("nowhere.h5");
  const std::string message = testing::message_of<UsageError>([&] { RunRecord record(s, s.best_mode); });
  EXPECT_NE(message.find("nowhere.h5' not found"), std::string::npos) << message;
}

TEST_F(RunRecordTest, TheBestFollowsTheMode) {
  const TrainKeys low = settings("min"), high = settings("max");
  RunRecord min_record(low, low.best_mode), max_record(high, high.best_mode);
  EXPECT_TRUE(min_record.improves(2.0));  // anything beats none
  EXPECT_FALSE(min_record.improves(2.5));
  EXPECT_FALSE(min_record.improves(2.0));  // a tie is no improvement
  EXPECT_TRUE(min_record.improves(1.5));
  EXPECT_EQ(min_record.best(), 1.5);
  EXPECT_TRUE(max_record.improves(0.3));
  EXPECT_TRUE(max_record.improves(0.4));
  EXPECT_FALSE(max_record.improves(0.35));
  EXPECT_EQ(max_record.best(), 0.4);
}

TEST_F(RunRecordTest, EarlyStoppingCountsEvaluationsWithoutAnImprovementAboveTheDelta) {
  const TrainKeys s = settings("min", 2, 0.1);
  RunRecord record(s, s.best_mode);
  EXPECT_FALSE(record.count(1.0));
  EXPECT_FALSE(record.count(0.95));  // better, by less than the delta
  EXPECT_EQ(record.stop_wait(), 1);
  EXPECT_FALSE(record.count(0.8));  // better by 0.2: the count starts over
  EXPECT_EQ(record.stop_wait(), 0);
  EXPECT_EQ(record.stop_best(), 0.8);
  EXPECT_FALSE(record.count(0.85));
  EXPECT_TRUE(record.count(0.79));
  EXPECT_EQ(record.stop_wait(), 2);
}

TEST_F(RunRecordTest, ACheckpointKeepsTheBestAndTheCount) {
  const TrainKeys s = settings("min", 3);
  RunRecord record(s, s.best_mode);
  record.improves(1.25);
  record.count(1.25);
  record.count(1.5);
  const Checkpoint ckpt = written(record, 40);
  RunRecord resumed(s, s.best_mode);
  resumed.restore(ckpt);
  EXPECT_EQ(resumed.start_step(), 40);
  EXPECT_EQ(resumed.saved_at(), 40);
  EXPECT_EQ(resumed.best(), 1.25);
  EXPECT_EQ(resumed.stop_best(), 1.25);
  EXPECT_EQ(resumed.stop_wait(), 1);
}

TEST_F(RunRecordTest, AnotherMetricOrDirectionStartsTheBestOver) {
  const TrainKeys s = settings("min", 3);
  RunRecord record(s, s.best_mode);
  record.improves(2.3);
  record.count(2.3);
  record.count(2.4);
  TrainKeys other = settings("max", 3);
  other.best_metric = "eval_rouge";
  RunRecord resumed(other, other.best_mode);
  resumed.restore(written(record, 10));
  EXPECT_EQ(resumed.start_step(), 10);
  EXPECT_TRUE(std::isnan(resumed.best()));
  EXPECT_EQ(resumed.stop_wait(), 0);
  EXPECT_TRUE(resumed.improves(0.3));
}

TEST_F(RunRecordTest, AnEarlyStopTrainsOnWithPatienceLeft) {
  const TrainKeys s = settings("min", 1);
  RunRecord record(s, s.best_mode);
  record.count(1.0);
  record.count(1.1);
  record.stop_early(true);
  RunRecord same(s, s.best_mode);
  same.restore(written(record, 20));
  EXPECT_TRUE(same.stopped_early());
  const TrainKeys patient = settings("min", 5);
  RunRecord more(patient, patient.best_mode);
  more.restore(written(record, 20));
  EXPECT_FALSE(more.stopped_early());
  EXPECT_EQ(more.stop_wait(), 1);
}

}  // namespace
}  // namespace tandem
