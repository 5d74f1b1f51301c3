#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>

#include "tandem/dist/watchdog.h"

namespace {

// A collective that never completes, as when a peer rank has died.
class StuckWork : public tandem::Work {
 public:
  StuckWork() : Work("allreduce(sum) f32[8]") {}
  void wait() override {}
  bool done() override { return finished; }
  std::string failure() override { return error; }
  void abort() override { aborted = true; }
  std::atomic<bool> finished{false};
  std::atomic<bool> aborted{false};
  std::string error;  // set before watch(): what the library would report
};

TEST(Watchdog, FiresForAStuckCollectiveNamingItAndTheWait) {
  std::atomic<int> fired{0};
  std::string what;
  double waited = 0;
  tandem::Watchdog dog(0, 0.2, [&](const tandem::Work& w, double s) {
    what = w.what();
    waited = s;
    ++fired;
  });
  dog.watch(std::make_shared<StuckWork>());
  for (int i = 0; i < 100 && fired == 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  ASSERT_EQ(fired, 1);
  EXPECT_EQ(what, "allreduce(sum) f32[8]");
  EXPECT_GE(waited, 0.2);
  EXPECT_LT(waited, 1.5);
}

TEST(Watchdog, AbortsAtOnceOnALibraryErrorNamingIt) {
  // A NCCL error (a peer's network fault) must end the job with NCCL's words
  // right away, not after dist.timeout_s as "another rank probably died".
  std::atomic<int> failed{0}, timed_out{0};
  std::string what, why;
  bool aborted_first = false;
  auto work = std::make_shared<StuckWork>();
  work->error = "NCCL: remote process exited or there was a network error (NET/IB : ...)";
  tandem::Watchdog dog(
      0, 60.0, [&](const tandem::Work&, double) { ++timed_out; },
      [&](const tandem::Work& w, const std::string& message) {
        what = w.what();
        why = message;
        aborted_first = work->aborted;
        ++failed;
      });
  const auto start = std::chrono::steady_clock::now();
  dog.watch(work);
  for (int i = 0; i < 200 && failed == 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  ASSERT_EQ(failed, 1);
  EXPECT_EQ(timed_out, 0);
  EXPECT_EQ(what, "allreduce(sum) f32[8]");
  EXPECT_EQ(why, work->error);
  EXPECT_TRUE(aborted_first) << "the communicator must be aborted before the report";
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 3.0);
}

TEST(Watchdog, AbortsTheWorkOnTimeoutToo) {
  std::atomic<int> fired{0};
  auto work = std::make_shared<StuckWork>();
  tandem::Watchdog dog(0, 0.2, [&](const tandem::Work&, double) { ++fired; });
  dog.watch(work);
  for (int i = 0; i < 100 && fired == 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  ASSERT_EQ(fired, 1);
  EXPECT_TRUE(work->aborted);
}

TEST(Watchdog, StaysQuietForWorkThatFinishesInTime) {
  std::atomic<int> fired{0};
  tandem::Watchdog dog(0, 0.3, [&](const tandem::Work&, double) { ++fired; });
  auto work = std::make_shared<StuckWork>();
  dog.watch(work);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  work->finished = true;
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  EXPECT_EQ(fired, 0);
}

}  // namespace
