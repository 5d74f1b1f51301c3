#include "tandem/dist/mpi_deadline.h"

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

MpiDeadline::MpiDeadline(double seconds, std::string message)
    : timer_([this, seconds, message = std::move(message)] {
        std::unique_lock<std::mutex> lock(mutex_);
        if (met_.wait_for(lock, std::chrono::duration<double>(seconds), [this] { return done_; })) return;
        std::fprintf(stderr, "error: %s\n", message.c_str());
        std::fflush(stderr);
        std::_Exit(kExitWatchdog);
      }) {}

MpiDeadline::~MpiDeadline() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    done_ = true;
  }
  met_.notify_all();
  timer_.join();
}

}  // namespace tandem
