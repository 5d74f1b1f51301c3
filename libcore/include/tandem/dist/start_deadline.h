#pragma once
// A deadline for MPI start-up. MPI_Init_thread has none of its own: a rank
// that never arrives (stopped, lost on its way) would keep the others in it
// for good, before tandem's watchdog (dist/watchdog.h) exists to notice.
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>

namespace tandem {

// Seconds MPI start-up may take: TANDEM_START_TIMEOUT_S when `text` (its
// value) is set, else 600, the watchdog's own default before a job's
// dist.timeout_s is known. Anything but a positive number prints why and
// ends the process with status 2: there is no MPI yet to report through.
double start_timeout_s(const char* text);

// Armed on construction; unless destroyed within `seconds`, prints that start-up
// has not finished on `where` and ends the process with status 3 (a watchdog's),
// which makes the launcher end the other ranks.
class StartDeadline {
 public:
  StartDeadline(double seconds, std::string where);
  ~StartDeadline();
  StartDeadline(const StartDeadline&) = delete;
  StartDeadline& operator=(const StartDeadline&) = delete;

 private:
  std::mutex mutex_;
  std::condition_variable met_;
  bool done_ = false;
  std::thread timer_;  // last: it starts once the members it uses exist
};

}  // namespace tandem
