#include <gtest/gtest.h>
#include <torch/torch.h>

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#if TANDEM_TORCH_HAS_CUDA
#include <ATen/cuda/Sleep.h>
#endif

#include "tandem/data/loader.h"
#include "tandem/data/prefetcher.h"
#include "../test_support.h"

using tandem::Prefetcher;
using tandem::testing::message_of;

namespace {

// Polls, since the producer runs on its own schedule; false after ~5 s.
template <class Condition>
bool eventually(Condition condition) {
  for (int i = 0; i < 5000; ++i) {
    if (condition()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return condition();
}

TEST(Prefetcher, ReturnsItemsInOrderThenEnds) {
  Prefetcher<int64_t> items([](int64_t i) { return i * i; }, 3, 9, 2);
  for (int64_t i = 3; i < 9; ++i) EXPECT_EQ(items.next(), i * i);
  EXPECT_EQ(items.next(), std::nullopt);
  EXPECT_EQ(items.next(), std::nullopt);
}

TEST(Prefetcher, EmptyRange) {
  Prefetcher<int> items([](int64_t) { return 1; }, 5, 5, 1);
  EXPECT_EQ(items.next(), std::nullopt);
}

TEST(Prefetcher, RunsAtMostDepthAhead) {
  std::atomic<int64_t> started{0};
  const int depth = 3;
  Prefetcher<int64_t> items(
      [&started](int64_t i) {
        ++started;
        return i;
      },
      0, 20, depth);
  // It does prefetch: `depth` items are made before anyone asks...
  ASSERT_TRUE(eventually([&] { return started == depth; }));
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_EQ(started, depth);
  // ...and never more than `depth` beyond what was taken.
  for (int64_t taken = 1; taken <= 20; ++taken) {
    ASSERT_EQ(items.next(), taken - 1);
    EXPECT_LE(started, taken + depth);
    if (taken % 5 == 0) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  EXPECT_EQ(items.next(), std::nullopt);
  EXPECT_EQ(started, 20);
}

TEST(Prefetcher, StopsWhenDestroyedWhileTheProducerWaitsForRoom) {
  std::atomic<int64_t> started{0};
  {
    Prefetcher<std::string> items(
        [&started](int64_t i) {
          ++started;
          return std::to_string(i);
        },
        0, 1000000, 2);
    EXPECT_EQ(items.next(), "0");
    ASSERT_TRUE(eventually([&] { return started == 3; }));  // blocked on a full queue
  }
  EXPECT_EQ(started, 3);
}

TEST(Prefetcher, StopsWhenDestroyedBeforeAnyItemIsTaken) {
  std::atomic<int64_t> started{0};
  {
    Prefetcher<int> items(
        [&started](int64_t) {
          ++started;
          return 7;
        },
        0, 100, 1);
    // The one item the queue holds is made; the producer then waits for room.
    ASSERT_TRUE(eventually([&] { return started == 1; }));
  }
  EXPECT_EQ(started, 1);  // the destructor returned, and nothing more was made
}

TEST(Prefetcher, RethrowsWhatMakeThrewAfterTheItemsBeforeIt) {
  Prefetcher<int64_t> items(
      [](int64_t i) -> int64_t {
        if (i == 2) throw std::runtime_error("sample 2: truncated record");
        return i;
      },
      0, 5, 4);
  EXPECT_EQ(items.next(), 0);
  EXPECT_EQ(items.next(), 1);
  EXPECT_EQ(message_of<std::runtime_error>([&] { items.next(); }), "sample 2: truncated record");
  EXPECT_THROW(items.next(), std::runtime_error);
}

TEST(Prefetcher, RejectsAZeroDepth) {
  EXPECT_THROW(Prefetcher<int>([](int64_t) { return 0; }, 0, 1, 0), std::invalid_argument);
}

TEST(Loader, CpuBatchesStayAsTheyAre) {
  const tandem::Batch batch = {{"x", torch::arange(6).view({2, 3})}, {"y", torch::ones({2})}};
  const tandem::Batch moved = tandem::to_device(batch, c10::Device("cpu"));
  ASSERT_EQ(moved.size(), 2u);
  EXPECT_TRUE(moved.at("x").is_same(batch.at("x")));
  EXPECT_TRUE(moved.at("y").is_same(batch.at("y")));

  int calls = 0;
  auto make = tandem::pinned_for(
      [&calls](int64_t i) {
        ++calls;
        return tandem::Batch{{"i", torch::full({1}, i)}};
      },
      c10::Device("cpu"));
  EXPECT_EQ(make(4).at("i").item<int64_t>(), 4);
  EXPECT_EQ(calls, 1);
}

TEST(Loader, CudaBatchesArePinnedAndCopied) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device";
  const c10::Device gpu("cuda:0");
  tandem::Loader loader(tandem::pinned_for(
                            [](int64_t i) {
                              return tandem::Batch{{"x", torch::full({64}, i)}};
                            },
                            gpu),
                        0, 3, 2);
  for (int64_t i = 0; i < 3; ++i) {
    const tandem::Batch host = *loader.next();
    EXPECT_TRUE(host.at("x").is_pinned());
    const tandem::Batch device = tandem::to_device(host, gpu);
    EXPECT_TRUE(device.at("x").is_cuda());
    EXPECT_EQ(device.at("x").sum().item<int64_t>(), 64 * i);
  }
  // Unpinned input is pinned on the way, and a CUDA batch goes back to the host.
  const tandem::Batch back = tandem::to_device(tandem::to_device({{"x", torch::ones({3})}}, gpu), c10::Device("cpu"));
  EXPECT_TRUE(back.at("x").device().is_cpu());
  EXPECT_EQ(back.at("x").sum().item<float>(), 3.0f);
}

// The feed's batches, in order, with host and device copies; `device` from
// a Loader of 5 batches whose "x" is i in 64 elements.
void check_feed(const c10::Device& device) {
  tandem::Loader loader(
      tandem::pinned_for([](int64_t i) { return tandem::Batch{{"x", torch::full({64}, i)}}; }, device), 0, 5, 2);
  tandem::DeviceFeed feed(loader, device);
  for (int64_t i = 0; i < 5; ++i) {
    auto [host, on_device] = feed.next();
    EXPECT_TRUE(host.at("x").device().is_cpu());
    EXPECT_EQ(on_device.at("x").device(), device);
    // Read on the caller's stream, which the feed ordered after the copy.
    EXPECT_EQ(on_device.at("x").sum().item<int64_t>(), 64 * i);
    EXPECT_EQ(host.at("x").sum().item<int64_t>(), 64 * i);
  }
  EXPECT_THROW(feed.next(), std::logic_error);
}

TEST(DeviceFeed, CpuBatchesInOrderThenItEnds) { check_feed(c10::Device("cpu")); }

TEST(DeviceFeed, CudaBatchesCopiedOnTheirOwnStreamInOrder) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device";
  check_feed(c10::Device("cuda:0"));
}

// Batches big enough that a copy takes far longer than a kernel launch (64
// MiB, milliseconds over PCIe): read at once, a batch whose copy the caller's
// stream did not wait for would sum a half-copied tensor; read again after
// the GPU has slept, once the next batch's copy has begun, a batch whose
// memory was not marked in use on the caller's stream (record_stream) would
// have been handed to that copy and overwritten.
TEST(DeviceFeed, CudaCopiesAreWaitedForAndTheirMemoryKeptWhileInUse) {
#if TANDEM_TORCH_HAS_CUDA
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device";
  const c10::Device gpu("cuda:0");
  const int64_t n = int64_t{1} << 24;
  tandem::Loader loader(tandem::pinned_for(
                            [n](int64_t i) {
                              return tandem::Batch{{"x", torch::full({n}, i + 1, torch::kInt32)}};
                            },
                            gpu),
                        0, 6, 2);
  tandem::DeviceFeed feed(loader, gpu);
  std::vector<at::Tensor> at_once, later;
  for (int64_t i = 0; i < 6; ++i) {
    const at::Tensor x = feed.next().device.at("x");
    at_once.push_back(x.sum());
    at::cuda::sleep(50'000'000);  // tens of milliseconds of the caller's stream
    later.push_back(x.sum());
  }
  for (int64_t i = 0; i < 6; ++i) {
    EXPECT_EQ(at_once[i].item<int64_t>(), (i + 1) * n) << "batch " << i << " read before its copy ended";
    EXPECT_EQ(later[i].item<int64_t>(), (i + 1) * n) << "batch " << i << "'s memory was reused while in use";
  }
#else
  GTEST_SKIP() << "built against a LibTorch without CUDA";
#endif
}

}  // namespace
