#pragma once
// TensorBoard event files, so that a run's curves open in `tensorboard
// --logdir RUN/tb` (or `%tensorboard` in a notebook) as they would for a
// PyTorch run with SummaryWriter. The file is a sequence of TFRecords (a
// length and the data, each followed by its masked CRC-32C) of Event protocol
// buffers; the three messages tandem writes (Event, Summary and its Value and
// Image) are encoded here, with TensorFlow's field numbers.
#include <cstdint>
#include <fstream>
#include <mutex>
#include <string>

#include <vector>

#include "tandem/obs/gpu_monitor.h"
#include "tandem/obs/metrics.h"

namespace tandem {

class TensorBoardWriter {
 public:
  // Creates `dir` and a new events.out.tfevents.<seconds>.<host>.<pid> file in
  // it (with a numbered suffix if that name is taken: several writers of one
  // process in one second), starting with the file-version record TensorBoard
  // looks for. TensorBoard reads every events file of a folder as one run.
  explicit TensorBoardWriter(const std::string& dir);

  // Thread-safe: the GPU monitor writes from its own thread.
  void scalar(const std::string& tag, int64_t step, double value);
  // A PNG image of height x width pixels with `channels` (1 gray, 3 RGB, 4 RGBA).
  void image(const std::string& tag, int64_t step, const std::string& png, int height, int width, int channels);
  // A PNG file as written (its size from its header). Throws
  // std::runtime_error naming the file when it cannot be read or is not a PNG.
  void png_file(const std::string& tag, int64_t step, const std::string& path);
  // What the GPU monitor sampled, as gpu<N>/util_percent, gpu<N>/mem_used_gib
  // and gpu<N>/temperature_c (N: nvidia-smi's numbering); values a GPU did
  // not report are left out.
  void gpus(int64_t step, const std::vector<GpuSample>& samples);
  // Every number of a metrics.jsonl row but its "step", tagged by its name, at that step.
  void row(const MetricsWriter::Row& row);
  void flush();

  const std::string& path() const { return path_; }

 private:
  void event(int64_t step, const std::string& summary);

  std::mutex mu_;
  std::string path_;
  std::ofstream out_;
};

// CRC-32C (Castagnoli) of `data`, and the masked form TFRecords store, so
// that a CRC of data holding CRCs does not look like a CRC.
uint32_t crc32c(const std::string& data);
uint32_t masked_crc32c(const std::string& data);

}  // namespace tandem
