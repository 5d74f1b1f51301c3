#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <chrono>
#include <future>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "tandem/dist/watchdog.h"
#include "tandem/error.h"

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
  void finish() override {}
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

// Opens a gate when it goes out of scope, however the test leaves it:
// declared after the Watchdog, so that it opens before the watchdog's
// threads are joined.
struct OpenAtEnd {
  std::shared_ptr<Gate> gate;
  ~OpenAtEnd() { gate->open(); }
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
    const OpenAtEnd open_at_end{gate};
    dog.watch(work);
    // watch() never waits for a poll: a launching thread must not block on
    // it, even while the poll is stuck.
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    const auto t0 = Clock::now();
    dog.watch(std::make_shared<StuckWork>());
    EXPECT_LT(since(t0, Clock::now()), 0.05);
    EXPECT_TRUE(rec.wait_end(5.0));
    ASSERT_FALSE(rec.events.empty());
    EXPECT_NE(rec.events[0].find("watchdog: asking whether allreduce(sum) f32[8] on rank 0 has finished has not "
                                 "returned"),
              std::string::npos)
        << rec.events[0];
    // A poll starts within one tick of the watch, the work is given the
    // timeout and two ticks, and the monitor looks once per tick.
    EXPECT_LT(since(start, rec.end_time), 0.2 + 3 * 0.05 + 1.0);
    // Once the job ends, no collective starts.
    EXPECT_THROW(dog.watch(std::make_shared<StuckWork>()), tandem::JobEnding);
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

// A collective the watchdog aborts, as ncclCommAbort ends one: its wait
// returns, with whatever part of the result had arrived.
class AbortedMidWay : public StuckWork {
 protected:
  void finish() override {
    while (!aborted) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
};

TEST(Watchdog, AfterFiringEveryCommunicatorCallThrowsAndNoPartialResultIsUsed) {
  Record rec;
  tandem::Watchdog dog(0, 0.2, rec.hooks());
  auto finished_before = std::make_shared<StuckWork>();
  finished_before->finished = true;
  dog.watch(finished_before);
  auto aborted = std::make_shared<AbortedMidWay>();
  dog.watch(aborted);
  // The training thread waits in the collective the watchdog times out.
  auto waiter = std::async(std::launch::async, [&]() -> std::string {
    try {
      aborted->wait();
      return "returned a partial result";
    } catch (const tandem::JobEnding& e) {
      return e.what();
    }
  });
  ASSERT_TRUE(rec.wait_end(3.0));
  const std::string said = waiter.get();
  EXPECT_NE(said.find("allreduce(sum) f32[8]: the watchdog has ended the job"), std::string::npos) << said;
  // No new collective starts, a finished one's wait refuses too, and the
  // trainer's commit points (the step, a file) refuse.
  EXPECT_THROW(dog.watch(std::make_shared<StuckWork>()), tandem::JobEnding);
  EXPECT_THROW(finished_before->wait(), tandem::JobEnding);
  try {
    dog.require_running("the checkpoint of step 7");
    ADD_FAILURE() << "require_running did not throw";
  } catch (const tandem::JobEnding& e) {
    EXPECT_NE(std::string(e.what()).find("the checkpoint of step 7: the watchdog has ended the job"), std::string::npos)
        << e.what();
  }
}

TEST(Watchdog, BeforeFiringWaitsAndWatchesPass) {
  Record rec;
  tandem::Watchdog dog(0, 60.0, rec.hooks());
  auto work = std::make_shared<StuckWork>();
  dog.watch(work);
  EXPECT_NO_THROW(work->wait());
  EXPECT_NO_THROW(dog.require_running("the optimizer step"));
}

// A finished collective whose release blocks (cudaEventDestroy on a hung
// driver, in the watchdog's own thread once it holds the last reference),
// beside a second one that never finishes: the job still ends within the
// stated bound, naming both.
class BlocksWhenDestroyed : public StuckWork {
 public:
  explicit BlocksWhenDestroyed(std::shared_ptr<Gate> g) {
    finished = true;
    gate = std::move(g);
  }
  ~BlocksWhenDestroyed() override { gate->wait(); }
};

TEST(Watchdog, EndsTheJobWhenReleasingAFinishedWorkBlocks) {
  auto gate = std::make_shared<Gate>();
  Record rec;
  const double timeout = 0.5, tick = 0.05, grace = 0.3;
  const auto start = Clock::now();
  {
    tandem::Watchdog dog(0, timeout, rec.hooks(grace));
    const OpenAtEnd open_at_end{gate};
    dog.watch(std::make_shared<BlocksWhenDestroyed>(gate));
    dog.watch(std::make_shared<StuckWork>());
    ASSERT_TRUE(rec.wait_end(5.0));
  }
  EXPECT_LT(since(start, rec.end_time), timeout + 3 * tick + grace + 0.25);
  ASSERT_FALSE(rec.events.empty());
  EXPECT_NE(rec.events[0].find("watchdog: releasing 1 finished works on rank 0 (allreduce(sum) f32[8]) has not "
                               "returned"),
            std::string::npos)
      << rec.events[0];
  EXPECT_NE(rec.events[0].find("and allreduce(sum) f32[8] has not finished after "), std::string::npos)
      << rec.events[0];
  EXPECT_NE(rec.events[0].find(" s (dist.timeout_s)"), std::string::npos) << rec.events[0];
}

// A poll that blocks once the work has waited most of its timeout: the
// bound counts from the work's start, not from the poll's (which gave about
// twice the timeout).
class BlocksLate : public StuckWork {
 public:
  BlocksLate(std::shared_ptr<Gate> g, double after_s) : after_s_(after_s) { gate = std::move(g); }
  bool done() override {
    if (since(started(), Clock::now()) > after_s_) gate->wait();
    return false;
  }

 private:
  double after_s_;
};

TEST(Watchdog, TheStatedBoundHoldsWhenAPollBlocksLate) {
  auto gate = std::make_shared<Gate>();
  Record rec;
  const double timeout = 1.0, tick = 0.1;
  const auto start = Clock::now();
  {
    tandem::Watchdog dog(0, timeout, rec.hooks(/*grace_s=*/0.2));
    const OpenAtEnd open_at_end{gate};
    dog.watch(std::make_shared<BlocksLate>(gate, 0.85));
    ASSERT_TRUE(rec.wait_end(5.0));
  }
  EXPECT_LT(since(start, rec.end_time), timeout + 3 * tick + 0.2 + 0.15);
}

}  // namespace
