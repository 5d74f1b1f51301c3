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
      << static_cast<long long>(waited_s) << " s (" << work.timeout_key() << ")"
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
  require_running(work->what());
  work->ended_ = fired_;
  std::lock_guard<std::mutex> lock(mu_);
  in_flight_.push_back(std::move(work));
}

void Watchdog::require_running(const std::string& what) const {
  if (*fired_)
    throw JobEnding(what + ": the watchdog has ended the job (its report says why); nothing more is computed or "
                           "written");
}

class Watchdog::Busy {
 public:
  Busy(Watchdog& dog, std::string what) : dog_(dog) {
    std::lock_guard<std::mutex> lock(dog_.busy_mu_);
    dog_.busy_ = std::move(what);
    dog_.busy_since_ = Work::Clock::now();
  }
  ~Busy() {
    std::lock_guard<std::mutex> lock(dog_.busy_mu_);
    dog_.busy_.clear();
  }

 private:
  Watchdog& dog_;
};

std::string Watchdog::poll(const std::vector<WorkHandle>& works, double timeout_s, WorkHandle& bad,
                           std::vector<WorkHandle>& finished) {
  for (const auto& w : works) {
    bool done = false;
    std::string why;
    {
      Busy busy(*this, "asking whether " + w->what() + " on rank " + std::to_string(rank_) + " has finished");
      done = w->done();
      // A library error ends the job at once: waiting out the timeout would
      // only hide the reason behind "another rank probably died".
      why = done ? "" : w->failure();
    }
    if (done) {
      finished.push_back(w);
      continue;
    }
    const double waited = Seconds(Work::Clock::now() - w->started()).count();
    const double limit = w->own_timeout_s() > 0 ? w->own_timeout_s() : timeout_s;
    if (why.empty() && waited <= limit) continue;
    bad = w;
    if (!why.empty())
      return "watchdog: " + w->what() + " on rank " + std::to_string(rank_) + " failed: " + why + ". Ending the job.";
    return timeout_message(rank_, *w, waited);
  }
  return "";
}

void Watchdog::release(std::vector<WorkHandle>& works) {
  if (works.empty()) return;
  Busy busy(*this, "releasing " + std::to_string(works.size()) + " finished works on rank " + std::to_string(rank_) +
                       " (" + works.front()->what() + (works.size() > 1 ? ", ..." : "") + ")");
  works.clear();
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
    {
      std::lock_guard<std::mutex> lock(mu_);
      in_flight_.erase(std::remove_if(in_flight_.begin(), in_flight_.end(),
                                      [&](const WorkHandle& w) {
                                        return std::find(finished.begin(), finished.end(), w) != finished.end();
                                      }),
                       in_flight_.end());
    }
    // The snapshot's references go first, so that the last reference to a
    // finished work is the one release() drops.
    works.clear();
    release(finished);
  }
}

std::string Watchdog::overdue(double timeout_s, WorkHandle& bad) {
  const auto now = Work::Clock::now();
  std::string busy;
  double busy_s = 0;
  {
    std::lock_guard<std::mutex> lock(busy_mu_);
    if (!busy_.empty()) {
      busy = busy_;
      busy_s = Seconds(now - busy_since_).count();
    }
  }
  // Busy for less than a tick is a loop that is merely slow this tick; it
  // will report a work past its limit itself.
  const double tick = tick_of(timeout_s);
  if (busy.empty() || busy_s <= tick) return "";
  const std::string stuck = "watchdog: " + busy + " has not returned after " +
                            std::to_string(static_cast<long long>(busy_s)) + " s";
  // The job ends when a work is two ticks past its limit (the loop, free,
  // would have reported it by then), or when the loop has been stuck for
  // the timeout; either way the message names the work most overdue, if any.
  const bool stuck_long = busy_s > timeout_s;
  const double slack = 2 * tick;
  double worst = 0;
  for (const auto& w : in_flight_) {
    const double limit = w->own_timeout_s() > 0 ? w->own_timeout_s() : timeout_s;
    const double past = Seconds(now - w->started()).count() - limit;
    if (past > (stuck_long ? 0.0 : slack) && past > worst) {
      worst = past;
      bad = w;
    }
  }
  const std::string ending = ": the GPU or its driver is not answering; ending the job.";
  if (bad)
    return stuck + ", and " + bad->what() + " has not finished after " +
           std::to_string(static_cast<long long>(Seconds(now - bad->started()).count())) + " s (" +
           bad->timeout_key() + ")" + ending;
  if (!stuck_long) return "";
  return stuck + " (dist.timeout_s)" + ending;
}

void Watchdog::monitor() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stop_) {
    cv_.wait_for(lock, Seconds(tick_of(timeout_s_)), [this] { return stop_; });
    if (stop_ || firing_) return;
    WorkHandle bad;
    const std::string message = overdue(timeout_s_, bad);
    if (message.empty()) continue;
    lock.unlock();
    fire(message, bad);
    return;
  }
}

void Watchdog::fire(const std::string& message, WorkHandle bad) {
  if (firing_.exchange(true)) return;
  hooks_.report(message);
  // Only after the report: a thread refused from here on (JobEnding) ends
  // the process, and the reason must be out by then.
  fired_->store(true);
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
