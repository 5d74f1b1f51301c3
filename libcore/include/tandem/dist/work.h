#pragma once
// A collective in flight: what async communicator calls return.
#include <atomic>
#include <chrono>
#include <memory>
#include <string>

namespace tandem {

class Work {
 public:
  explicit Work(std::string what) : what_(std::move(what)), started_(Clock::now()) {}
  virtual ~Work() = default;

  // Blocks until the result is in the caller's tensor (for NCCL: until the
  // caller's compute stream is ordered after it). Rethrows a failed operation.
  virtual void wait() = 0;
  // Non-blocking; the watchdog polls this from its own thread.
  virtual bool done() = 0;
  // Why the operation can never finish ("" while it still may): an error
  // reported by the library behind it. Polled from the watchdog thread.
  virtual std::string failure() { return ""; }
  // Unblocks every thread waiting in the library (ncclCommAbort), so the
  // watchdog's report can reach the user. Called from the watchdog thread.
  virtual void abort() {}

  using Clock = std::chrono::steady_clock;
  const std::string& what() const { return what_; }
  Clock::time_point started() const { return started_; }
  // False while a work watched before its launch is still inside the launch
  // (which may block the host, as NCCL's first collective between two ranks
  // does while it connects them).
  bool launched() const { return launched_; }

 protected:
  std::atomic<bool> launched_{true};

 private:
  std::string what_;
  Clock::time_point started_;
};

using WorkHandle = std::shared_ptr<Work>;

}  // namespace tandem
