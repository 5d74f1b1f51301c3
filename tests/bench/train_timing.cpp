#include "train_timing.h"

#include <algorithm>
#include <chrono>

namespace bench {

Figures time_training(const c10::Device& device, int64_t warmup, int64_t steps, double items_per_step,
                      const std::function<at::Tensor()>& loss, const std::function<void()>& update) {
  using clock = std::chrono::steady_clock;
  const auto seconds_between = [](clock::time_point a, clock::time_point b) {
    return std::chrono::duration<double>(b - a).count();
  };
  // On a CPU each op has finished when it returns, so the phases are timed
  // for free; on a GPU that would take a synchronisation each, which would
  // slow the step down: there only the whole step is.
  const bool phases = device.is_cpu();
  double phase_s[3] = {0, 0, 0};
  const auto step = [&] {
    const auto t0 = clock::now();
    const at::Tensor value = loss();
    const auto t1 = clock::now();
    value.backward();
    const auto t2 = clock::now();
    update();
    const double result = value.item<double>();  // after the step: waits for the device to finish it
    if (phases) {
      phase_s[0] += seconds_between(t0, t1);
      phase_s[1] += seconds_between(t1, t2);
      phase_s[2] += seconds_between(t2, clock::now());
    }
    return result;
  };

  Figures figures;
  // The first loss is the untrained model's, warm-up or not.
  bool first = true;
  const auto record = [&](double value) {
    if (first) figures.loss_first = value;
    first = false;
    return value;
  };
  for (int64_t i = 0; i < warmup; ++i) record(step());
  std::fill(phase_s, phase_s + 3, 0.0);
  const auto start = clock::now();
  for (int64_t i = 0; i < steps; ++i) figures.loss_last = record(step());
  figures.items_per_s = items_per_step * static_cast<double>(steps) / seconds_between(start, clock::now());
  if (phases) {
    figures.forward_ms = phase_s[0] * 1e3 / static_cast<double>(steps);
    figures.backward_ms = phase_s[1] * 1e3 / static_cast<double>(steps);
    figures.optimizer_ms = phase_s[2] * 1e3 / static_cast<double>(steps);
  }
  return figures;
}

}  // namespace bench
