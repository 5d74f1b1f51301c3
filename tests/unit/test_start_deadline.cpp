// The deadline on MPI start-up: met, it leaves quietly; missed, it ends the
// process as a watchdog does (status 3), naming where.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "tandem/dist/start_deadline.h"

namespace {

TEST(StartDeadline, MetInTimeItEndsNothing) {
  { tandem::StartDeadline deadline(30, "here"); }
  SUCCEED();
}

TEST(StartDeadline, MissedItEndsTheProcessNamingWhere) {
  EXPECT_EXIT(
      {
        tandem::StartDeadline deadline(0.1, "node7, pid 42");
        std::this_thread::sleep_for(std::chrono::seconds(5));
      },
      ::testing::ExitedWithCode(3),
      "MPI start-up has not finished after 0.1 s \\(TANDEM_START_TIMEOUT_S\\) on node7, pid 42");
}

TEST(StartDeadline, TimeoutComesFromTheEnvironmentOr600) {
  EXPECT_EQ(tandem::start_timeout_s(nullptr), 600.0);
  EXPECT_EQ(tandem::start_timeout_s(""), 600.0);
  EXPECT_EQ(tandem::start_timeout_s("12.5"), 12.5);
  EXPECT_EXIT(tandem::start_timeout_s("soon"), ::testing::ExitedWithCode(2),
              "TANDEM_START_TIMEOUT_S must be a positive number of seconds, not 'soon'");
  EXPECT_EXIT(tandem::start_timeout_s("0"), ::testing::ExitedWithCode(2), "not '0'");
}

}  // namespace
