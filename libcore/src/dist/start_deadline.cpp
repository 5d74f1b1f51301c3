#include "tandem/dist/start_deadline.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "tandem/error.h"

namespace tandem {

double start_timeout_s(const char* text) {
  if (text == nullptr || *text == '\0') return 600.0;
  char* end = nullptr;
  const double seconds = std::strtod(text, &end);
  if (*end != '\0' || !(seconds > 0)) {
    std::fprintf(stderr, "error: TANDEM_START_TIMEOUT_S must be a positive number of seconds, not '%s'\n", text);
    std::_Exit(kExitUsage);
  }
  return seconds;
}

StartDeadline::StartDeadline(double seconds, std::string where)
    : timer_([this, seconds, where = std::move(where)] {
        std::unique_lock<std::mutex> lock(mutex_);
        if (met_.wait_for(lock, std::chrono::duration<double>(seconds), [this] { return done_; })) return;
        std::fprintf(stderr,
                     "error: MPI start-up has not finished after %g s (TANDEM_START_TIMEOUT_S) on %s: another "
                     "rank did not start or is stopped; ending the job.\n",
                     seconds, where.c_str());
        std::fflush(stderr);
        std::_Exit(kExitWatchdog);
      }) {}

StartDeadline::~StartDeadline() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    done_ = true;
  }
  met_.notify_all();
  timer_.join();
}

}  // namespace tandem
