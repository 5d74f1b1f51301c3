#include "tandem/dist/mpi_thread.h"

namespace tandem {

MpiThread::MpiThread() : thread_([this] { loop(); }) {}

MpiThread::~MpiThread() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_one();
  thread_.join();
}

std::future<void> MpiThread::submit(std::function<void()> job) {
  // The job is dropped as soon as it has run, and what it captured (a
  // collective's tensors) with it: the task's shared state, which keeps its
  // callable, lives as long as the future, and the watchdog holds the work
  // with the future until its next poll, up to a second on. ZeRO's flats,
  // kept so, outlived their step.
  auto holder = std::make_shared<std::function<void()>>(std::move(job));
  std::packaged_task<void()> task([holder] {
    const std::function<void()> run = std::move(*holder);
    *holder = nullptr;
    run();
  });
  auto future = task.get_future();
  {
    std::lock_guard<std::mutex> lock(mu_);
    queue_.push_back(std::move(task));
  }
  cv_.notify_one();
  return future;
}

void MpiThread::loop() {
  for (;;) {
    std::packaged_task<void()> task;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [this] { return stop_ || !queue_.empty(); });
      if (queue_.empty()) return;
      task = std::move(queue_.front());
      queue_.pop_front();
    }
    task();
  }
}

}  // namespace tandem
