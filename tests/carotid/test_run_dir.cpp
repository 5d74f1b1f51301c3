// Where a training run writes, and how a Slurm job requeued after preemption
// finds the folder its first start created.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "../unit/test_support.h"
#include "app/run_dir.h"
#include "keys.h"
#include "tandem/config/config.h"
#include "tandem/config/schema.h"

namespace {

namespace fs = std::filesystem;

class RunDirTest : public tandem::testing::TempDirTest {
 protected:
  void SetUp() override {
    TempDirTest::SetUp();
    ::setenv("SLURM_JOB_ID", "4242", 1);
  }
  void TearDown() override {
    ::unsetenv("SLURM_JOB_ID");
    TempDirTest::TearDown();
  }
  tandem::Config job_config() const {
    tandem::Config config(carotid::carotid_schema());
    config.set("train.out_dir", path("out"), "test");
    return config;
  }
};

// train sets train.out_dir to the run folder before it creates the folder;
// the marker must still land where the requeued job looks for it.
TEST_F(RunDirTest, ARequeuedSlurmJobContinuesTheRunItsFirstStartCreated) {
  const std::string dir = carotid::pick_run_dir(job_config());
  EXPECT_EQ(fs::path(dir).parent_path(), fs::path(path("out")));
  tandem::Config running = job_config();
  running.set("train.out_dir", dir, "the run folder");
  carotid::create_run_dir(running, dir);
  EXPECT_TRUE(fs::is_regular_file(path("out/.slurm-job-4242")));
  EXPECT_EQ(carotid::pick_run_dir(job_config()), dir);
}

TEST_F(RunDirTest, AnotherJobStartsAFolderOfItsOwn) {
  const std::string dir = carotid::pick_run_dir(job_config());
  carotid::create_run_dir(job_config(), dir);
  ::setenv("SLURM_JOB_ID", "4343", 1);
  const std::string other = carotid::pick_run_dir(job_config());
  EXPECT_NE(other, dir);
  EXPECT_EQ(fs::path(other).parent_path(), fs::path(path("out")));
}

TEST_F(RunDirTest, AGivenRunDirIsTakenAndNoMarkerWritten) {
  tandem::Config config = job_config();
  config.set("cmd.run_dir", path("mine"), "--run-dir");
  EXPECT_EQ(carotid::pick_run_dir(config), path("mine"));
  carotid::create_run_dir(config, path("mine"));
  EXPECT_TRUE(fs::is_directory(path("mine")));
  EXPECT_FALSE(fs::exists(path("out/.slurm-job-4242")));
}

}  // namespace
