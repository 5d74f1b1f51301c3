#pragma once
// The settings of a training run, each declared once in train_keys.cpp (key,
// field, default, doc, check), so that job files, scripts and tests rely on
// the same names in every app and --help, the schema and the checks agree.
//
// An app that trains one model takes every key under [train]. An app that
// trains several in one job (apps/vavae: a VAE, a DiT, a judging classifier)
// gives each model a table of its own for the keys that differ by model (how
// long, how large a batch, the optimizer and its schedule); the keys of the
// run itself (seed, precision, checkpoints, resume) stay under [train].
#include <cstdint>
#include <string>
#include <vector>

#include "tandem/config/settings.h"

namespace tandem {

// The key a user sets for a field of TrainSettings: "train.lr", or "dit.lr"
// when the model's keys live in [dit]. Messages about a setting name it
// through this, so that they name the key the user actually wrote.
struct KeyNames {
  std::string model_table = "train";
  std::string operator()(const std::string& field) const;
};

// train.best_metric's value for "pick nothing": the final model is the run's.
inline constexpr const char* kNoBestMetric = "none";

struct TrainSettings {
  // The run's keys, always under [train] (gpu_every_s is obs.gpu_every_s).
  std::string out_dir = "runs/run";
  int64_t seed = 1337;
  int64_t global_batch = 0, grad_accum = 1;
  double min_lr = 0.0, eps = 1e-8;
  std::string precision = "auto";
  int64_t eval_every = 0, ckpt_every = 0, keep_last = 3, log_every = 10, max_bad_steps = 10;
  std::string resume = "auto";
  std::string best_metric = "eval_loss", best_mode = "min";
  double gpu_every_s = 30.0;
  bool tensorboard = true;  // obs.tensorboard

  // The model's keys: under [train], or the model's own table.
  int64_t max_steps = 0, epochs = 1;
  CountOrAuto micro_batch{8};
  double lr = 3e-4;
  std::string schedule = "cosine";
  std::string recompute = "none";
  int64_t warmup_steps = 0;
  double weight_decay = 0.1, beta1 = 0.9, beta2 = 0.999, grad_clip = 1.0, ema_decay = 0.0;
  int64_t ema_bn_batches = 0;
  int64_t early_stop_patience = 0;
  double early_stop_min_delta = 0.0;

  KeyNames key;
};

// Every setting under [train], with the app's `defaults`.
void add_train_keys(Schema& schema, const TrainSettings& defaults = {});
// For an app that trains several models: the run's keys under [train], none
// of the model's; each model then adds its table with add_model_keys. The
// model's keys under [train] are retired (Schema::retire): set there, they
// are refused with the keys of `model_tables` to set instead.
void add_run_keys(Schema& schema, const TrainSettings& defaults, const std::vector<std::string>& model_tables);
// The model's keys under [table]; `what` starts each doc ("train-dit").
void add_model_keys(Schema& schema, const std::string& table, const std::string& what,
                    const TrainSettings& defaults = {});

// The settings of the model whose keys are under [model_table], with the
// run's from [train]. Throws UsageError naming the key for values no run
// could use.
TrainSettings train_settings(const Config& config, const std::string& model_table = "train");
// The run's settings alone (out_dir, seed, precision ...), each checked; the
// model's keep their defaults. For commands that train nothing, and in apps
// whose models' keys are not under [train].
TrainSettings run_settings(const Config& config);
// The run's settings as a config.toml or model file stored them, unchecked:
// the build that wrote it accepted them.
TrainSettings run_fields(const Config& config);

}  // namespace tandem
