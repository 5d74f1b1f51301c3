#include "tandem/dist/watchdog.h"

#include <mpi.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <future>
#include <sstream>

#include "tandem/error.h"
#include "tandem/obs/log.h"

namespace tandem {
namespace {

using Seconds = std::chrono::duration<double>;

// Polling a few times per timeout keeps the overshoot small without costing
// anything measurable next to a collective.
double tick_of(double timeout_s) { return std::clamp(timeout_s / 10.0, 0.05, 1.0); }

std::string timeout_message(int rank, const Work& work, double waited_s) {
  std::ostringstream msg;
  msg << "watchdog: " << work.what() << " on rank " << rank << " has not finished after "
      << static_cast<long long>(waited_s) << " s (dist.timeout_s)"
      << (work.launched() ? "" : ", still inside its launch") << ". Another rank probably "
      << "died or stopped issuing collectives; ending the job.";
  return msg.str();
}

void end_with_mpi_abort() {
  std::fflush(nullptr);
  MPI_Abort(MPI_COMM_WORLD, kExitWatchdog);
  _exit(kExitWatchdog);
}

}  // namespace

Watchdog::Watchdog(int rank, double timeout_s, WatchdogHooks hooks) : rank_(rank), hooks_(std::move(hooks)), timeout_s_(timeout_s) {
  if (!hooks_.report) hooks_.report = [](const std::string& message) { log::error(message); };
  if (!hooks_.end_job) hooks_.end_job = end_with_mpi_abort;
  thread_ = std::thread([this] { loop(); });
  monitor_ = std::thread([this] { monitor(); });
}

Watchdog::~Watchdog() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
  monitor_.join();
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

std::string Watchdog::poll(const std::vector<WorkHandle>& works, double timeout_s, WorkHandle& bad,
                           std::vector<WorkHandle>& finished) {
  for (const auto& w : works) {
    {
      std::lock_guard<std::mutex> lock(poll_mu_);
      polling_ = w->what();
      polling_since_ = Work::Clock::now();
    }
    const bool done = w->done();
    // A library error ends the job at once: waiting out the timeout would
    // only hide the reason behind "another rank probably died".
    const std::string why = done ? "" : w->failure();
    {
      std::lock_guard<std::mutex> lock(poll_mu_);
      polling_.clear();
    }
    if (done) {
      finished.push_back(w);
      continue;
    }
    const double waited = Seconds(Work::Clock::now() - w->started()).count();
    if (why.empty() && waited <= timeout_s) continue;
    bad = w;
    if (!why.empty())
      return "watchdog: " + w->what() + " on rank " + std::to_string(rank_) + " failed: " + why + ". Ending the job.";
    return timeout_message(rank_, *w, waited);
  }
  return "";
}

void Watchdog::loop() {
  for (;;) {
    std::vector<WorkHandle> works;
    double timeout_s = 0;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait_for(lock, Seconds(tick_of(timeout_s_)), [this] { return stop_; });
      if (stop_) return;
      works = in_flight_;
      timeout_s = timeout_s_;
    }
    WorkHandle bad;
    std::vector<WorkHandle> finished;
    const std::string message = poll(works, timeout_s, bad, finished);
    if (bad) {
      fire(message, bad);
      return;
    }
    std::lock_guard<std::mutex> lock(mu_);
    in_flight_.erase(std::remove_if(in_flight_.begin(), in_flight_.end(),
                                    [&](const WorkHandle& w) {
                                      return std::find(finished.begin(), finished.end(), w) != finished.end();
                                    }),
                     in_flight_.end());
  }
}

void Watchdog::monitor() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stop_) {
    cv_.wait_for(lock, Seconds(tick_of(timeout_s_)), [this] { return stop_; });
    if (stop_ || fired_) return;
    const double timeout_s = timeout_s_;
    std::string what;
    double polled_s = 0;
    {
      std::lock_guard<std::mutex> poll_lock(poll_mu_);
      if (!polling_.empty()) {
        what = polling_;
        polled_s = Seconds(Work::Clock::now() - polling_since_).count();
      }
    }
    if (what.empty() || polled_s <= timeout_s) continue;
    lock.unlock();
    fire("watchdog: asking whether " + what + " on rank " + std::to_string(rank_) + " has finished has not returned after " +
             std::to_string(static_cast<long long>(polled_s)) +
             " s (dist.timeout_s): the GPU or its driver is not answering; ending the job.",
         nullptr);
    return;
  }
}

void Watchdog::fire(const std::string& message, WorkHandle bad) {
  if (fired_.exchange(true)) return;
  hooks_.report(message);
  if (bad) {
    auto aborted = std::make_shared<std::promise<void>>();
    auto done = aborted->get_future();
    std::thread([bad, aborted] {
      bad->abort();
      aborted->set_value();
    }).detach();
    done.wait_for(Seconds(hooks_.abort_grace_s));
  }
  hooks_.end_job();
}

}  // namespace tandem
