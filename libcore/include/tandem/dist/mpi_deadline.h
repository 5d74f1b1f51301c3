#pragma once
// Deadlines for the two MPI calls no watchdog can watch: MPI_Init_thread,
// before tandem's watchdog (dist/watchdog.h) exists, and MPI_Finalize, after
// it is gone. Neither has a timeout of its own: a rank that never arrives
// (stopped, lost on its way, stopped after its last collective) would keep
// the others in them for good, and the launcher with them.
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

// Armed on construction; unless destroyed within `seconds`, prints
// "error: <message>" and ends the process with status 3 (a watchdog's), which
// makes the launcher end the other ranks.
class MpiDeadline {
 public:
  MpiDeadline(double seconds, std::string message);
  ~MpiDeadline();
  MpiDeadline(const MpiDeadline&) = delete;
  MpiDeadline& operator=(const MpiDeadline&) = delete;

 private:
  std::mutex mutex_;
  std::condition_variable met_;
  bool done_ = false;
  std::thread timer_;  // last: it starts once the members it uses exist
};

}  // namespace tandem
