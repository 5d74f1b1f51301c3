#pragma once
// Rank 0's account of a run as it trains: metrics.jsonl, TensorBoard events
// in out_dir/tb (obs.tensorboard), the progress line, a step line in the log
// every train.log_every steps, and the GPU monitor's samples, filed under
// the last step reported.
//
// The contract:
// - Made on every rank; only rank 0's writes anything, so callers need not
//   ask which rank they are on. Made when the loop starts: a run with nothing
//   left to do writes no row.
// - row() is the one way a row reaches both metrics.jsonl and TensorBoard
//   (an evaluation, the memory plan, an early stop); step() is a training
//   step's row, which also moves the progress line and becomes the step the
//   GPU monitor's samples are filed under.
// - finish() ends the progress line and logs the tokens the steps of this
//   run (since its start or resume) computed and how many were padding.
// - gpu_monitor() hands the caller a monitor whose samples are logged and
//   filed here: the caller's scope bounds its thread, which must end before
//   the report does.
#include <atomic>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>

#include "tandem/obs/gpu_monitor.h"
#include "tandem/obs/metrics.h"
#include "tandem/obs/progress.h"
#include "tandem/obs/tensorboard.h"
#include "tandem/train/train_keys.h"

namespace tandem {

class TrainReport {
 public:
  TrainReport(bool writes, const std::filesystem::path& out_dir, const TrainKeys& settings, int64_t start_step,
              int64_t total_steps);

  void row(const MetricsWriter::Row& row);
  // `line` follows the step count on the progress line and in the log.
  void step(int64_t done, const MetricsWriter::Row& row, const std::string& line);
  // A step's real and computed tokens (padding included), summed over the
  // ranks; finish() logs the run's totals and their pad fraction.
  void count_tokens(double real, double computed);
  void finish();
  std::unique_ptr<GpuMonitor> gpu_monitor(double every_s);

 private:
  int64_t total_steps_, log_every_;
  std::unique_ptr<MetricsWriter> metrics_;
  std::unique_ptr<TensorBoardWriter> tensorboard_;
  std::unique_ptr<Progress> progress_;
  double real_tokens_ = 0, computed_tokens_ = 0;
  // Read by the GPU monitor's thread.
  std::atomic<int64_t> reported_{0};
};

}  // namespace tandem
