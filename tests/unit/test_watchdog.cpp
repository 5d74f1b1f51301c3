#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <chrono>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "tandem/dist/watchdog.h"

namespace {

using Clock = std::chrono::steady_clock;

// Blocks whoever calls wait() until open() (at the end of a test, so that
// the watchdog's threads can be joined).
struct Gate {
  std::atomic<bool> is_open{false};
  void wait() const {
    while (!is_open) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  void open() { is_open = true; }
};

// A collective that never completes, as when a peer rank has died; each of
// its calls can be made to block as a hung GPU driver or NCCL would.
class StuckWork : public tandem::Work {
 public:
  explicit StuckWork(bool launched = true) : Work("allreduce(sum) f32[8]") { launched_ = launched; }
  void wait() override {}
  bool done() override {
    if (block_done) gate->wait();
    return finished;
  }
  std::string failure() override { return error; }
  void abort() override {
    aborted = true;
    if (block_abort) gate->wait();
  }
  std::atomic<bool> finished{false};
  std::atomic<bool> aborted{false};
  bool block_done = false, block_abort = false;
  // Shared: an abort still blocked when the test ends runs on in its
  // detached thread, and must find its gate.
  std::shared_ptr<Gate> gate;
  std::string error;  // set before watch(): what the library would report
};

// A stuck work whose done() or abort() blocks until its gate opens.
std::shared_ptr<StuckWork> blocking(bool in_done, const std::shared_ptr<Gate>& gate) {
  auto work = std::make_shared<StuckWork>();
  (in_done ? work->block_done : work->block_abort) = true;
  work->gate = gate;
  return work;
}

// What the watchdog did, in order, and when the job ended.
struct Record {
  std::mutex mu;
  std::vector<std::string> events;
  std::atomic<int> ended{0};
  Clock::time_point end_time;
  void add(const std::string& e) {
    std::lock_guard<std::mutex> lock(mu);
    events.push_back(e);
  }
  tandem::WatchdogHooks hooks(double grace_s = 10.0) {
    tandem::WatchdogHooks h;
    h.report = [this](const std::string& message) { add(message); };
    h.end_job = [this] {
      end_time = Clock::now();
      add("end");
      ++ended;
    };
    h.abort_grace_s = grace_s;
    return h;
  }
  bool wait_end(double seconds) {
    const auto until = Clock::now() + std::chrono::duration<double>(seconds);
    while (ended == 0 && Clock::now() < until) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    return ended == 1;
  }
};

double since(Clock::time_point start, Clock::time_point end) {
  return std::chrono::duration<double>(end - start).count();
}

TEST(Watchdog, FiresForAStuckCollectiveNamingItAndTheWait) {
  Record rec;
  tandem::Watchdog dog(0, 0.2, rec.hooks());
  dog.watch(std::make_shared<StuckWork>());
  ASSERT_TRUE(rec.wait_end(3.0));
  ASSERT_EQ(rec.events.size(), 2u);
  EXPECT_NE(rec.events[0].find("watchdog: allreduce(sum) f32[8] on rank 0 has not finished after 0 s (dist.timeout_s)"),
            std::string::npos)
      << rec.events[0];
  EXPECT_EQ(rec.events[1], "end");
}

TEST(Watchdog, ReportsALibraryErrorAtOnceBeforeAbortingTheWork) {
  // A NCCL error (a peer's network fault) must end the job with NCCL's words
  // right away, not after dist.timeout_s as "another rank probably died";
  // the words come first, since the abort may block.
  Record rec;
  auto work = std::make_shared<StuckWork>();
  work->error = "NCCL: remote process exited or there was a network error (NET/IB : ...)";
  bool aborted_before_report = true;
  auto hooks = rec.hooks();
  hooks.report = [&](const std::string& message) {
    aborted_before_report = work->aborted;
    rec.add(message);
  };
  const auto start = Clock::now();
  tandem::Watchdog dog(0, 60.0, hooks);
  dog.watch(work);
  ASSERT_TRUE(rec.wait_end(3.0));
  EXPECT_EQ(rec.events[0], "watchdog: allreduce(sum) f32[8] on rank 0 failed: " + work->error + ". Ending the job.");
  EXPECT_FALSE(aborted_before_report);
  EXPECT_TRUE(work->aborted);
  EXPECT_LT(since(start, rec.end_time), 3.0);
}

TEST(Watchdog, AbortsTheWorkOnTimeoutToo) {
  Record rec;
  auto work = std::make_shared<StuckWork>();
  tandem::Watchdog dog(0, 0.2, rec.hooks());
  dog.watch(work);
  ASSERT_TRUE(rec.wait_end(3.0));
  EXPECT_TRUE(work->aborted);
}

TEST(Watchdog, StaysQuietForWorkThatFinishesInTime) {
  Record rec;
  tandem::Watchdog dog(0, 0.3, rec.hooks());
  auto work = std::make_shared<StuckWork>();
  dog.watch(work);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  work->finished = true;
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  EXPECT_EQ(rec.ended, 0);
}

TEST(Watchdog, EndsTheJobWhenTheAbortBlocks) {
  // ncclCommAbort can itself hang on a broken node: the job still ends,
  // abort_grace_s after the report.
  auto gate = std::make_shared<Gate>();
  Record rec;
  auto work = blocking(/*in_done=*/false, gate);
  const auto start = Clock::now();
  {
    tandem::Watchdog dog(0, 0.2, rec.hooks(/*grace_s=*/0.3));
    dog.watch(work);
    EXPECT_TRUE(rec.wait_end(5.0));
    EXPECT_TRUE(work->aborted);
    EXPECT_LT(since(start, rec.end_time), 0.2 + 0.05 + 0.3 + 1.0);
    gate->open();
  }
}

TEST(Watchdog, EndsTheJobWhenPollingBlocksNamingTheWork) {
  // cudaEventQuery on a hung GPU: the watchdog's own thread is stuck in
  // done(), and the monitor ends the job.
  auto gate = std::make_shared<Gate>();
  Record rec;
  auto work = blocking(/*in_done=*/true, gate);
  const auto start = Clock::now();
  {
    tandem::Watchdog dog(0, 0.2, rec.hooks());
    dog.watch(work);
    EXPECT_TRUE(rec.wait_end(5.0));
    ASSERT_FALSE(rec.events.empty());
    EXPECT_NE(rec.events[0].find("watchdog: asking whether allreduce(sum) f32[8] on rank 0 has finished has not "
                                 "returned"),
              std::string::npos)
        << rec.events[0];
    // A poll starts within one tick of the watch and is given the timeout;
    // the monitor looks once per tick.
    EXPECT_LT(since(start, rec.end_time), 0.2 + 3 * 0.05 + 1.0);
    // watch() never waits for a poll: a launching thread must not block on it.
    const auto t0 = Clock::now();
    dog.watch(std::make_shared<StuckWork>());
    EXPECT_LT(since(t0, Clock::now()), 0.05);
    gate->open();
  }
}

TEST(Watchdog, TimesOutALaunchThatNeverReturns) {
  // Watched before its launch, as NcclComm does: a launch that blocks the
  // host (NCCL connecting to a peer that never comes) ends the job too.
  Record rec;
  tandem::Watchdog dog(0, 0.2, rec.hooks());
  dog.watch(std::make_shared<StuckWork>(/*launched=*/false));
  ASSERT_TRUE(rec.wait_end(3.0));
  EXPECT_NE(rec.events[0].find("has not finished after 0 s (dist.timeout_s), still inside its launch"),
            std::string::npos)
      << rec.events[0];
}

}  // namespace
