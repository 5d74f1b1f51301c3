#pragma once
// Work done by a job on the MPI thread: finished when the job's future is
// ready. `then` runs on the waiting thread, which is where results staged in
// host memory are copied back (device copies belong to the caller's stream).
#include <functional>
#include <future>

#include "tandem/dist/work.h"

namespace tandem {

class FutureWork : public Work {
 public:
  FutureWork(std::string what, std::future<void> future, std::function<void()> then = {})
      : Work(std::move(what)), future_(future.share()), then_(std::move(then)) {}
  FutureWork(std::string what, std::shared_future<void> future)
      : Work(std::move(what)), future_(std::move(future)) {}

  bool done() override { return future_.wait_for(std::chrono::seconds(0)) == std::future_status::ready; }

 protected:
  void finish() override {
    future_.get();
    if (then_) {
      then_();
      then_ = nullptr;
    }
  }

 private:
  std::shared_future<void> future_;
  std::function<void()> then_;
};

}  // namespace tandem
