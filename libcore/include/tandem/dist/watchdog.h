#pragma once
// Turns a collective that never finishes into an error instead of a hang.
// A rank that died or stopped issuing collectives leaves its peers blocked
// inside MPI or NCCL forever; a thread that watches every operation in flight
// can still name the operation, the rank and the time waited, and end the job.
//
// Nothing the watchdog calls may keep it from ending the job, since any of
// it can block when a GPU or a peer is in trouble: polling a work (done(),
// failure(): cudaEventQuery, ncclCommGetAsyncError), aborting it
// (ncclCommAbort), even the launch that is being watched. So, as PyTorch's
// ProcessGroupNCCL does with its watchdog and heartbeat monitor:
// - works are polled without the watchdog's lock held, so watch() from a
//   launching thread never waits for a poll;
// - a work is watched from before its launch (Work::launched()), so a launch
//   that blocks the host times out like a collective that never finishes;
// - on a timeout or a library error the message is reported first, the
//   work's abort() runs on a thread of its own, and the job ends when it
//   returns or after abort_grace_s, whichever comes first;
// - everything the watching thread does is done under a second thread's
//   eye: each poll, and the release of finished works (a NCCL work's
//   destructor calls cudaEventDestroy, which a hung driver can block). That
//   monitor ends the job when the first thread has been busy with one thing
//   for longer than the timeout, or when a work in flight is two ticks past
//   its limit, which the first thread, had it been free, would have caught.
// A job therefore ends within its limit + three ticks (a tick is a tenth of
// dist.timeout_s, within [0.05, 1] s: two of slack, one of the monitor's
// own wait) + abort_grace_s of a stuck operation's start, whatever blocks. PyTorch's
// ProcessGroupNCCL erases finished works inside its watched loop likewise,
// but bounds a stuck watchdog only by its heartbeat (480 s by default).
#include <atomic>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "tandem/dist/work.h"

namespace tandem {

struct WatchdogHooks {
  // Says why the job ends; called once, before anything is aborted. The
  // default logs it as an error.
  std::function<void(const std::string& message)> report;
  // Ends the job; called once, after report. The default calls MPI_Abort
  // with status 3 (kExitWatchdog), which makes the launcher end every rank.
  std::function<void()> end_job;
  // How long a work's abort() may run before the job ends anyway.
  double abort_grace_s = 10.0;
};

class Watchdog {
 public:
  Watchdog(int rank, double timeout_s, WatchdogHooks hooks = {});
  // Stops both threads; in a job that ended, the process is gone before.
  ~Watchdog();
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;

  void set_timeout(double timeout_s);
  double timeout() const;
  // Watches `work` from now on; called before its launch. Throws JobEnding
  // once the watchdog has fired: no collective starts after that.
  void watch(WorkHandle work);
  // Throws JobEnding, naming `what` (the collective about to start, the
  // step or file about to be committed), once the watchdog has fired.
  void require_running(const std::string& what) const;

 private:
  void loop();
  void monitor();
  // Checks the works of one tick: those done go to `finished`; returns the
  // message for the first that failed or ran past the timeout, with that
  // work in `bad`, or "" when none did.
  std::string poll(const std::vector<WorkHandle>& works, double timeout_s, WorkHandle& bad,
                   std::vector<WorkHandle>& finished);
  // Drops the watching thread's references to `works`, destroying those it
  // held last, under the monitor's eye.
  void release(std::vector<WorkHandle>& works);
  // What the monitor finds wrong this tick ("" when nothing), and the work
  // to abort; with mu_ held.
  std::string overdue(double timeout_s, WorkHandle& bad);
  void fire(const std::string& message, WorkHandle bad);

  // Marks the watching thread busy with `what` while it lives.
  class Busy;

  int rank_;
  WatchdogHooks hooks_;
  mutable std::mutex mu_;  // in_flight_, timeout_s_, stop_; never held while polling
  std::condition_variable cv_;
  std::vector<WorkHandle> in_flight_;
  double timeout_s_;
  bool stop_ = false;
  // What the watching thread is busy with, for the monitor: what, and since
  // when ("" while it waits for the next tick).
  std::mutex busy_mu_;
  std::string busy_;
  Work::Clock::time_point busy_since_;
  std::atomic<bool> firing_{false};  // fire() runs once
  // Set once the report is out; shared with every work watched, whose
  // wait() then refuses (work.h).
  std::shared_ptr<std::atomic<bool>> fired_ = std::make_shared<std::atomic<bool>>(false);
  std::thread thread_;
  std::thread monitor_;
};

}  // namespace tandem
