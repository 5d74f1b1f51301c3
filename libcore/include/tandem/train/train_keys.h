#pragma once
// The train.* and obs.* keys every app shares, so that job files, scripts and
// tests can rely on the same names across apps, and reading them back checked.
#include <cstdint>
#include <string>

namespace tandem {

class Schema;
class Config;

// Defaults an app may choose for its users; the keys are the same everywhere.
struct TrainDefaults {
  std::string out_dir = "runs/run";
  int64_t micro_batch = 8;
  int64_t grad_accum = 1;
  int64_t max_steps = 0;
  int64_t epochs = 1;
  double lr = 3e-4;
  double min_lr = 0.0;
  int64_t warmup_steps = 0;
  std::string schedule = "cosine";
  double weight_decay = 0.1;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double ema_decay = 0.0;
  std::string best_metric = "eval_loss";
  std::string best_mode = "min";
};

struct TrainSettings {
  std::string out_dir;
  int64_t seed;
  int64_t max_steps, epochs;
  int64_t micro_batch, global_batch, grad_accum;
  double lr, min_lr;
  int64_t warmup_steps;
  std::string schedule;
  double weight_decay, beta1, beta2, eps, grad_clip;
  std::string precision;
  int64_t eval_every, ckpt_every, keep_last, log_every, max_bad_steps;
  std::string resume;
  double ema_decay;
  std::string best_metric, best_mode;
  double bucket_mb;
  double gpu_every_s;
};

void add_train_keys(Schema& schema, const TrainDefaults& defaults = {});
// Throws UsageError naming the key for values no run could use.
TrainSettings train_settings(const Config& config);

}  // namespace tandem
