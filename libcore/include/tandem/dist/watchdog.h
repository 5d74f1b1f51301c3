#pragma once
// Turns a collective that never finishes into an error instead of a hang.
// A rank that died or stopped issuing collectives leaves its peers blocked
// inside MPI or NCCL forever; a thread that watches every operation in flight
// can still name the operation, the rank and the time waited, and end the job.
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "tandem/dist/work.h"

namespace tandem {

class Watchdog {
 public:
  // Called once, from the watchdog thread, for the first operation that ran
  // past the timeout. The default logs and calls MPI_Abort.
  using OnTimeout = std::function<void(const Work& work, double waited_s)>;
  // Called once, from the watchdog thread, for the first operation whose
  // library reported an error (Work::failure()). The default logs and calls
  // MPI_Abort. Either way the work's abort() has run first.
  using OnFailure = std::function<void(const Work& work, const std::string& why)>;

  Watchdog(int rank, double timeout_s, OnTimeout on_timeout = {}, OnFailure on_failure = {});
  ~Watchdog();
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;

  void set_timeout(double timeout_s);
  double timeout() const;
  void watch(WorkHandle work);

 private:
  void loop();
  int rank_;
  OnTimeout on_timeout_;
  OnFailure on_failure_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::vector<WorkHandle> in_flight_;
  double timeout_s_;
  bool stop_ = false;
  bool fired_ = false;
  std::thread thread_;
};

}  // namespace tandem
