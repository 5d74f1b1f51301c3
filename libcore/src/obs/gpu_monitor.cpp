#include "tandem/obs/gpu_monitor.h"

#include <chrono>
#include <cstdio>
#include <exception>

#include "nvml_session.h"
#include "tandem/obs/log.h"

namespace tandem {

std::vector<GpuSample> sample_gpus_once() {
  const auto session = nvml::Session::open();
  return session ? session->sample() : std::vector<GpuSample>{};
}

int driver_gpu_count() {
  const auto session = nvml::Session::open();
  return session ? static_cast<int>(session->device_count()) : 0;
}

std::string format(const GpuSample& s) {
  constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
  std::string out = "gpu" + std::to_string(s.index) + " util ";
  out += s.util_percent ? std::to_string(*s.util_percent) + "%" : "n/a";
  out += " mem ";
  if (s.mem_used_bytes && s.mem_total_bytes) {
    char mem[64];
    std::snprintf(mem, sizeof mem, "%.1f/%.1f GiB", *s.mem_used_bytes / kGiB, *s.mem_total_bytes / kGiB);
    out += mem;
  } else {
    out += "n/a";
  }
  out += s.temperature_c ? " " + std::to_string(*s.temperature_c) + "C" : " temp n/a";
  return out;
}

GpuMonitor::GpuMonitor(double every_s, Sink sink) : sink_(std::move(sink)) {
  if (!(every_s > 0)) return;
  nvml_ = nvml::Session::open();
  if (!nvml_ || nvml_->device_count() == 0) {
    nvml_.reset();
    return;
  }
  thread_ = std::thread([this, every_s] { loop(every_s); });
}

GpuMonitor::~GpuMonitor() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void GpuMonitor::loop(double every_s) {
  using Clock = std::chrono::steady_clock;
  const auto period = std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(every_s));
  // Deadlines, not sleeps: samples stay on a fixed cadence however long the sink takes.
  auto next = Clock::now() + period;
  std::unique_lock<std::mutex> lock(mutex_);
  while (!wake_.wait_until(lock, next, [this] { return stop_; })) {
    lock.unlock();
    try {
      sink_(nvml_->sample());
    } catch (const std::exception& e) {
      log::warn("GPU monitor stopped: ", e.what());
      return;
    }
    lock.lock();
    next += period;
    // A sink slower than the period skips samples rather than bursting to catch up.
    if (next < Clock::now()) next = Clock::now() + period;
  }
}

}  // namespace tandem
