#pragma once
// GPU utilisation, memory and temperature sampled in the background, the way
// one watches nvidia-smi beside a run, but into the run's log. Uses NVML from
// the driver when there is one and does nothing when there is not (CPU runs).
//
// NVML ignores CUDA_VISIBLE_DEVICES and numbers GPUs as nvidia-smi does (PCI
// order), so the monitor reports every GPU of the node, other jobs' included;
// which of them this job uses is for the start-up log (each rank's placement)
// to say.
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace tandem {

namespace nvml {
class Session;
}

struct GpuSample {
  unsigned index = 0;  // NVML's (nvidia-smi's) numbering, not CUDA's
  std::string name;
  // Empty where the device does not report the value (e.g. utilisation under MIG).
  std::optional<unsigned> util_percent;
  std::optional<uint64_t> mem_used_bytes, mem_total_bytes;
  std::optional<unsigned> temperature_c;
};

// All GPUs of the node now; empty without NVML or GPUs.
std::vector<GpuSample> sample_gpus_once();
// How many GPUs the driver sees (NVML, as nvidia-smi, which is NVML's own
// client), whatever CUDA_VISIBLE_DEVICES says; 0 without a driver.
int driver_gpu_count();

// "gpu0 util 97% mem 61.2/79.6 GiB 64C"; "n/a" for what was not reported.
std::string format(const GpuSample& sample);

class GpuMonitor {
 public:
  using Sink = std::function<void(const std::vector<GpuSample>&)>;

  // Calls `sink` with all GPUs every `every_s` seconds, from the monitor's own
  // thread. No thread is started when every_s <= 0 or NVML finds no GPU. A
  // sink that throws stops the monitor (with a warning), not the run.
  GpuMonitor(double every_s, Sink sink);
  // Returns within moments whatever every_s is.
  ~GpuMonitor();
  GpuMonitor(const GpuMonitor&) = delete;
  GpuMonitor& operator=(const GpuMonitor&) = delete;

  // Whether sampling started: NVML found GPUs and every_s > 0.
  bool active() const { return thread_.joinable(); }

 private:
  void loop(double every_s);

  Sink sink_;
  std::unique_ptr<nvml::Session> nvml_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace tandem
