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

void fail_job(int rank, const Work& work, const std::string& why) {
  log::error("watchdog: ", work.what(), " on rank ", rank, " failed: ", why, ". Ending the job.");
  MPI_Abort(MPI_COMM_WORLD, kExitWatchdog);
}

}  // namespace

Watchdog::Watchdog(int rank, double timeout_s, OnTimeout on_timeout, OnFailure on_failure)
    : rank_(rank),
      on_timeout_(on_timeout ? std::move(on_timeout) : [rank](const Work& w, double s) { abort_job(rank, w, s); }),
      on_failure_(on_failure ? std::move(on_failure)
                             : [rank](const Work& w, const std::string& why) { fail_job(rank, w, why); }),
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
    in_flight_.erase(
        std::remove_if(in_flight_.begin(), in_flight_.end(), [](const WorkHandle& w) { return w->done(); }),
        in_flight_.end());
    const auto now = Work::Clock::now();
    for (const auto& w : in_flight_) {
      // A library error ends the job at once: waiting out the timeout would
      // only hide the reason behind "another rank probably died".
      const std::string why = w->failure();
      const double waited = std::chrono::duration<double>(now - w->started()).count();
      if (why.empty() && waited <= timeout_s_) continue;
      fired_ = true;
      WorkHandle bad = w;
      lock.unlock();
      bad->abort();
      if (why.empty())
        on_timeout_(*bad, waited);
      else
        on_failure_(*bad, why);
      lock.lock();
      break;
    }
  }
}

}  // namespace tandem
