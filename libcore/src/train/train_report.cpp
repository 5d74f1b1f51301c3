#include "tandem/train/train_report.h"

#include <iostream>

#include "tandem/obs/log.h"
#include "tandem/text/message_text.h"

namespace tandem {

TrainReport::TrainReport(bool writes, const std::filesystem::path& out_dir, const TrainKeys& settings,
                         int64_t start_step, int64_t total_steps)
    : total_steps_(total_steps), log_every_(settings.log_every), reported_(start_step) {
  if (!writes) return;
  metrics_ = std::make_unique<MetricsWriter>((out_dir / "metrics.jsonl").string());
  if (settings.tensorboard) tensorboard_ = std::make_unique<TensorBoardWriter>((out_dir / "tb").string());
  progress_ = std::make_unique<Progress>("train", total_steps, std::cerr, console_redraws(), 10.0);
}

void TrainReport::row(const MetricsWriter::Row& row) {
  if (metrics_) metrics_->write(row);
  if (tensorboard_) tensorboard_->row(row);
}

void TrainReport::step(int64_t done, const MetricsWriter::Row& row, const std::string& line) {
  if (!metrics_) return;
  this->row(row);
  reported_ = done;
  progress_->update(done, line);
  if (done % log_every_ == 0 || done == total_steps_)
    log::write(log::Level::Debug, "step " + std::to_string(done) + " " + line);
}

void TrainReport::count_tokens(double real, double computed) {
  real_tokens_ += real;
  computed_tokens_ += computed;
}

void TrainReport::finish() {
  if (!progress_) return;
  progress_->finish();
  if (computed_tokens_ > 0)
    log::info("tokens: ", static_cast<int64_t>(computed_tokens_), " computed, ", static_cast<int64_t>(real_tokens_),
              " of them real: pad_fraction ", number_text(1.0 - real_tokens_ / computed_tokens_));
}

std::unique_ptr<GpuMonitor> TrainReport::gpu_monitor(double every_s) {
  return std::make_unique<GpuMonitor>(every_s, [this](const std::vector<GpuSample>& gpus) {
    for (const auto& g : gpus) log::info(format(g));
    if (tensorboard_) tensorboard_->gpus(reported_, gpus);
  });
}

}  // namespace tandem
