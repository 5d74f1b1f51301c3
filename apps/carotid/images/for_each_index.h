#pragma once
// Image decoding spread over a few threads: stb and the resize are
// single-threaded per image, so a batch or a cache is filled image-parallel.
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace carotid {

// Calls fn(i) for i in [0, n) on `threads` threads (thread t takes t, t +
// threads, ...), waits for all, and rethrows the first exception thrown.
inline void for_each_index(int64_t n, int64_t threads, const std::function<void(int64_t)>& fn) {
  threads = std::max<int64_t>(1, std::min(threads, n));
  if (threads == 1) {
    for (int64_t i = 0; i < n; ++i) fn(i);
    return;
  }
  std::exception_ptr first;
  std::mutex mutex;
  std::vector<std::thread> pool;
  for (int64_t t = 0; t < threads; ++t)
    pool.emplace_back([&, t] {
      try {
        for (int64_t i = t; i < n; i += threads) fn(i);
      } catch (...) {
        std::lock_guard<std::mutex> lock(mutex);
        if (!first) first = std::current_exception();
      }
    });
  for (auto& thread : pool) thread.join();
  if (first) std::rethrow_exception(first);
}

}  // namespace carotid
