#include "tandem/dist/watchdog.h"

#include <mpi.h>

#include <algorithm>
#include <sstream>

#include "tandem/error.h"
#include "tandem/obs/log.h"

namespace tandem {
namespace {

void abort_job(int rank, const Work& work, double waited_s) {
  std::ostringstream msg;
  msg << "watchdog: " << work.what() << " on rank " << rank << " has not finished after "
      << static_cast<long long>(waited_s) << " s (dist.timeout_s). Another rank probably "
      << "died or stopped issuing collectives; ending the job.";
  log::error(msg.str());
  MPI_Abort(MPI_COMM_WORLD, kExitWatchdog);
}

}  // namespace

Watchdog::Watchdog(int rank, double timeout_s, OnTimeout on_timeout)
    : rank_(rank),
      on_timeout_(on_timeout ? std::move(on_timeout)
                             : [rank](const Work& w, double s) { abort_job(rank, w, s); }),
      timeout_s_(timeout_s),
      thread_([this] { loop(); }) {}

Watchdog::~Watchdog() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_one();
  thread_.join();
}

void Watchdog::set_timeout(double timeout_s) {
  std::lock_guard<std::mutex> lock(mu_);
  timeout_s_ = timeout_s;
}

double Watchdog::timeout() const {
  std::lock_guard<std::mutex> lock(mu_);
  return timeout_s_;
}

void Watchdog::watch(WorkHandle work) {
  std::lock_guard<std::mutex> lock(mu_);
  in_flight_.push_back(std::move(work));
}

void Watchdog::loop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stop_) {
    // Polling a few times per timeout keeps the overshoot small without
    // costing anything measurable next to a collective.
    const double tick = std::clamp(timeout_s_ / 10.0, 0.05, 1.0);
    cv_.wait_for(lock, std::chrono::duration<double>(tick), [this] { return stop_; });
    if (stop_ || fired_) continue;
    in_flight_.erase(std::remove_if(in_flight_.begin(), in_flight_.end(),
                                    [](const WorkHandle& w) { return w->done(); }),
                     in_flight_.end());
    const auto now = Work::Clock::now();
    for (const auto& w : in_flight_) {
      const double waited = std::chrono::duration<double>(now - w->started()).count();
      if (waited > timeout_s_) {
        fired_ = true;
        WorkHandle late = w;
        lock.unlock();
        on_timeout_(*late, waited);
        lock.lock();
        break;
      }
    }
  }
}

}  // namespace tandem
