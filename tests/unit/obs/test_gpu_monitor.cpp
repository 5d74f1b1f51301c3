#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "tandem/obs/gpu_monitor.h"

namespace {

using tandem::GpuMonitor;
using tandem::GpuSample;
using Clock = std::chrono::steady_clock;

constexpr uint64_t kGiB = 1024ull * 1024 * 1024;

TEST(GpuMonitor, FormatsOneLinePerGpu) {
  GpuSample s;
  s.index = 0;
  s.name = "NVIDIA H100 80GB HBM3";
  s.util_percent = 97;
  s.mem_used_bytes = static_cast<uint64_t>(61.2 * kGiB);
  s.mem_total_bytes = static_cast<uint64_t>(79.6 * kGiB);
  s.temperature_c = 64;
  EXPECT_EQ(tandem::format(s), "gpu0 util 97% mem 61.2/79.6 GiB 64C");
}

TEST(GpuMonitor, FormatsWhatTheDeviceDidNotReportAsNa) {
  GpuSample s;
  s.index = 3;
  EXPECT_EQ(tandem::format(s), "gpu3 util n/a mem n/a temp n/a");
}

TEST(GpuMonitor, WithoutNvmlGpusIsANoOpThatNeverCallsTheSink) {
  if (!tandem::sample_gpus_once().empty()) GTEST_SKIP() << "NVML reports GPUs on this machine";
  std::atomic<int> calls{0};
  {
    GpuMonitor monitor(0.001, [&](const std::vector<GpuSample>&) { ++calls; });
    EXPECT_FALSE(monitor.active());
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_EQ(calls.load(), 0);
}

TEST(GpuMonitor, NonPositivePeriodDisablesIt) {
  std::atomic<int> calls{0};
  GpuMonitor monitor(0, [&](const std::vector<GpuSample>&) { ++calls; });
  EXPECT_FALSE(monitor.active());
  EXPECT_EQ(calls.load(), 0);
}

TEST(GpuMonitor, SamplesEveryGpuOnCadenceAndStopsPromptly) {
  const auto once = tandem::sample_gpus_once();
  if (once.empty()) GTEST_SKIP() << "no GPU visible to NVML (no NVIDIA driver here)";
  for (const auto& s : once) {
    EXPECT_FALSE(s.name.empty());
    ASSERT_TRUE(s.mem_total_bytes.has_value());
    EXPECT_GT(*s.mem_total_bytes, 0u);
  }
  std::atomic<int> calls{0};
  std::atomic<size_t> gpus{0};
  {
    GpuMonitor monitor(0.02, [&](const std::vector<GpuSample>& samples) {
      gpus = samples.size();
      ++calls;
    });
    EXPECT_TRUE(monitor.active());
    const auto deadline = Clock::now() + std::chrono::seconds(5);
    while (calls < 3 && Clock::now() < deadline) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  EXPECT_GE(calls.load(), 3);
  EXPECT_EQ(gpus.load(), once.size());

  // A long period must not hold up the end of a run.
  const auto start = Clock::now();
  {
    GpuMonitor monitor(3600, [](const std::vector<GpuSample>&) {});
  }
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(1));
}

}  // namespace
