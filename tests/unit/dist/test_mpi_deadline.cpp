// The deadlines on MPI start-up and shut-down: met, they leave quietly;
// missed, they end the process as a watchdog does (status 3) with their message.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "tandem/dist/mpi_deadline.h"

namespace {

TEST(MpiDeadline, MetInTimeItEndsNothing) {
  { tandem::MpiDeadline deadline(30, "never printed"); }
  SUCCEED();
}

TEST(MpiDeadline, MissedItEndsTheProcessWithItsMessage) {
  EXPECT_EXIT(
      {
        tandem::MpiDeadline deadline(0.1, "MPI shut-down has not finished on node7, pid 42");
        std::this_thread::sleep_for(std::chrono::seconds(5));
      },
      ::testing::ExitedWithCode(3), "error: MPI shut-down has not finished on node7, pid 42");
}

TEST(MpiDeadline, StartTimeoutComesFromTheEnvironmentOr600) {
  EXPECT_EQ(tandem::start_timeout_s(nullptr), 600.0);
  EXPECT_EQ(tandem::start_timeout_s(""), 600.0);
  EXPECT_EQ(tandem::start_timeout_s("12.5"), 12.5);
  EXPECT_EXIT(tandem::start_timeout_s("soon"), ::testing::ExitedWithCode(2),
              "TANDEM_START_TIMEOUT_S must be a positive number of seconds, not 'soon'");
  EXPECT_EXIT(tandem::start_timeout_s("0"), ::testing::ExitedWithCode(2), "not '0'");
}

}  // namespace
