#pragma once
// The one thread that makes MPI calls. Autograd hooks, loaders and watchdogs run
// on threads of their own; MPI under MPI_THREAD_SERIALIZED forbids concurrent
// calls, so every call after start-up is a job queued here and run in order.
// Queue order is also the order collectives are issued, which every rank must
// share: submitting in the same order on all ranks is the caller's contract.
#include <condition_variable>
#include <deque>
#include <functional>
#include <future>
#include <mutex>
#include <thread>

namespace tandem {

class MpiThread {
 public:
  MpiThread();
  ~MpiThread();  // runs what is queued, then joins
  MpiThread(const MpiThread&) = delete;
  MpiThread& operator=(const MpiThread&) = delete;

  std::future<void> submit(std::function<void()> job);
  // Submit and wait: for start-up exchanges that the caller needs right away.
  void run(std::function<void()> job) { submit(std::move(job)).get(); }

 private:
  void loop();
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::packaged_task<void()>> queue_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace tandem
