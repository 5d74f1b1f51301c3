#pragma once
// A collective in flight: what async communicator calls return.
#include <atomic>
#include <chrono>
#include <memory>
#include <string>

#include "tandem/error.h"

namespace tandem {

class Work {
 public:
  explicit Work(std::string what) : what_(std::move(what)), started_(Clock::now()) {}
  virtual ~Work() = default;

  // Blocks until the result is in the caller's tensor (for NCCL: until the
  // caller's compute stream is ordered after it). Rethrows a failed
  // operation. Throws JobEnding when the watchdog that watches it has fired
  // by the time the wait returns: an aborted collective returns with
  // whatever part of the result it had. (Not before the wait: the caller
  // would free what a queued job still writes to.) (A NCCL wait only orders the compute stream
  // after the collective; whoever commits what the stream computes, an
  // optimizer step or a file, checks Watchdog::require_running again once
  // the device has caught up: Trainer::Impl::require_whole.)
  void wait() {
    finish();
    require_running();
  }
  // Non-blocking; the watchdog polls this from its own thread.
  virtual bool done() = 0;
  // Why the operation can never finish ("" while it still may): an error
  // reported by the library behind it. Polled from the watchdog thread.
  virtual std::string failure() { return ""; }
  // Unblocks every thread waiting in the library (ncclCommAbort), so the
  // watchdog's report can reach the user. Called from the watchdog thread.
  virtual void abort() {}

  // The limit the watchdog holds this work to, when not its own
  // (dist.timeout_s): one-sided set-up the other ranks wait for
  // (World::setup_barrier). Set before the work is watched.
  void hold_to(double timeout_s, std::string key) {
    own_timeout_s_ = timeout_s;
    timeout_key_ = std::move(key);
  }
  double own_timeout_s() const { return own_timeout_s_; }  // 0: the watchdog's
  const std::string& timeout_key() const { return timeout_key_; }

  // Throws JobEnding, naming the work, once its watchdog has fired.
  void require_running() const {
    if (ended_ && *ended_)
      throw JobEnding(what_ + ": the watchdog has ended the job (its report says why); nothing computed after "
                              "it is used or written");
  }

  using Clock = std::chrono::steady_clock;
  const std::string& what() const { return what_; }
  Clock::time_point started() const { return started_; }
  // False while a work watched before its launch is still inside the launch
  // (which may block the host, as NCCL's first collective between two ranks
  // does while it connects them).
  bool launched() const { return launched_; }

 protected:
  // wait()'s backend part.
  virtual void finish() = 0;
  std::atomic<bool> launched_{true};

 private:
  friend class Watchdog;
  // The watchdog's "fired", set when it watches the work.
  std::shared_ptr<const std::atomic<bool>> ended_;
  double own_timeout_s_ = 0;
  std::string timeout_key_ = "dist.timeout_s";
  std::string what_;
  Clock::time_point started_;
};

using WorkHandle = std::shared_ptr<Work>;

}  // namespace tandem
