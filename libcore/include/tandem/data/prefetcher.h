#pragma once
// Makes the next items on a background thread while the caller works on the
// current one, so loading and preprocessing hide behind compute.
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>

namespace tandem {

template <class T>
class Prefetcher {
 public:
  using Make = std::function<T(int64_t i)>;

  // Calls make(i) for i = begin .. end-1, in order, on one thread, starting a
  // call only while fewer than `depth` results wait, so at most `depth` items
  // (and their memory) are ever ahead of the caller.
  Prefetcher(Make make, int64_t begin, int64_t end, int depth)
      : make_(std::move(make)), next_(begin), end_(end), depth_(depth) {
    if (depth < 1 || begin > end)
      throw std::invalid_argument("Prefetcher: depth " + std::to_string(depth) + ", range [" + std::to_string(begin) +
                                  ", " + std::to_string(end) + ")");
    thread_ = std::thread([this] { produce(); });
  }

  // Waits for a make() in progress to return, never for the queue to drain.
  ~Prefetcher() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    space_.notify_all();
    thread_.join();
  }
  Prefetcher(const Prefetcher&) = delete;
  Prefetcher& operator=(const Prefetcher&) = delete;

  // The next item in order; nullopt after the last. If make() threw, the items
  // made before it come first, then every call rethrows that exception.
  std::optional<T> next() {
    std::unique_lock<std::mutex> lock(mu_);
    ready_cv_.wait(lock, [this] { return !ready_.empty() || finished_; });
    if (ready_.empty()) {
      if (error_) std::rethrow_exception(error_);
      return std::nullopt;
    }
    std::optional<T> item(std::move(ready_.front()));
    ready_.pop_front();
    lock.unlock();
    space_.notify_one();
    return item;
  }

 private:
  void produce() {
    for (;;) {
      int64_t i;
      {
        std::unique_lock<std::mutex> lock(mu_);
        space_.wait(lock, [this] { return stop_ || ready_.size() < depth_; });
        if (stop_ || next_ == end_) break;
        i = next_++;
      }
      try {
        T item = make_(i);
        std::lock_guard<std::mutex> lock(mu_);
        ready_.push_back(std::move(item));
      } catch (...) {
        std::lock_guard<std::mutex> lock(mu_);
        error_ = std::current_exception();
        break;
      }
      ready_cv_.notify_one();
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      finished_ = true;
    }
    ready_cv_.notify_all();
  }

  Make make_;
  int64_t next_;
  const int64_t end_;
  const size_t depth_;
  std::mutex mu_;
  std::condition_variable space_;     // the producer waits for room
  std::condition_variable ready_cv_;  // the caller waits for an item
  std::deque<T> ready_;
  std::exception_ptr error_;
  bool stop_ = false;
  bool finished_ = false;
  std::thread thread_;  // last: starts only once everything above exists
};

}  // namespace tandem
