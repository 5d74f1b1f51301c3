#include "tandem/train/train_keys.h"

#include "tandem/config/config.h"
#include "tandem/config/schema.h"
#include "tandem/error.h"

namespace tandem {

void add_train_keys(Schema& s, const TrainDefaults& d) {
  s.add("train.out_dir", d.out_dir,
        "run directory: config.toml, metrics.jsonl, logs/, checkpoints/, models/");
  s.add("train.seed", int64_t{1337}, "seed for weights, sample order and augmentation; -1 picks one");
  s.add("train.max_steps", d.max_steps, "optimizer steps to train; 0 means train.epochs epochs");
  s.add("train.epochs", d.epochs, "passes over the training set when train.max_steps is 0");
  s.add("train.micro_batch", d.micro_batch, "samples per rank per forward pass");
  s.add("train.global_batch", int64_t{0},
        "samples per optimizer step over all ranks; sets grad_accum when > 0");
  s.add("train.grad_accum", d.grad_accum,
        "micro-batches accumulated per optimizer step (ignored when global_batch > 0)");
  s.add("train.lr", d.lr, "peak learning rate");
  s.add("train.min_lr", d.min_lr, "learning rate at the end of the cosine or linear decay");
  s.add("train.warmup_steps", d.warmup_steps, "steps of linear warmup");
  s.add("train.schedule", d.schedule, "learning-rate schedule after warmup",
        {"constant", "cosine", "linear"});
  s.add("train.weight_decay", d.weight_decay,
        "AdamW decoupled weight decay (not applied to biases, norms or 1-D parameters)");
  s.add("train.beta1", d.beta1, "AdamW beta1");
  s.add("train.beta2", d.beta2, "AdamW beta2");
  s.add("train.eps", 1e-8, "AdamW epsilon");
  s.add("train.grad_clip", 1.0, "clip the global gradient norm to this; 0 disables");
  s.add("train.precision", std::string("auto"),
        "forward precision: auto = bf16 on GPUs with compute capability >= 8, fp16 on older "
        "GPUs, fp32 on CPU",
        {"auto", "fp32", "fp16", "bf16"});
  s.add("train.eval_every", int64_t{0}, "evaluate every N steps; 0: at the end of each epoch");
  s.add("train.ckpt_every", int64_t{0}, "checkpoint every N steps; 0: at the end only");
  s.add("train.keep_last", int64_t{3}, "checkpoints kept in checkpoints/; 0 keeps all");
  s.add("train.log_every", int64_t{10}, "write a step line (loss, lr, ms) to the log file every N steps");
  s.add("train.max_bad_steps", int64_t{10},
        "non-finite steps in a row (fp32/bf16) before the run stops");
  s.add("train.resume", std::string("auto"),
        "\"auto\": continue from the latest checkpoint in out_dir if any; \"none\": start fresh "
        "(refused if out_dir has checkpoints); or a checkpoint file");
  s.add("train.ema_decay", d.ema_decay,
        "keep an exponential moving average of the weights with this decay per step (0: none); "
        "saved as the set ema/ in checkpoints and model files");
  s.add("train.best_metric", d.best_metric, "metric that picks models/best_model.h5");
  s.add("train.best_mode", d.best_mode, "whether a smaller or larger best_metric is better",
        {"min", "max"});
  s.add("dist.bucket_mb", 25.0, "size of the gradient buckets all-reduced during backward, MiB");
  s.add("obs.gpu_every_s", 30.0, "log each GPU's utilisation, memory and temperature this often; 0 disables");
}

namespace {

void require(bool ok, const Config& c, const std::string& key, const std::string& what) {
  if (!ok) throw UsageError(key + " " + what + " (" + c.source(key) + ")");
}

}  // namespace

TrainSettings train_settings(const Config& c) {
  TrainSettings t;
  t.out_dir = c.get_string("train.out_dir");
  t.seed = c.get_int("train.seed");
  t.max_steps = c.get_int("train.max_steps");
  t.epochs = c.get_int("train.epochs");
  t.micro_batch = c.get_int("train.micro_batch");
  t.global_batch = c.get_int("train.global_batch");
  t.grad_accum = c.get_int("train.grad_accum");
  t.lr = c.get_double("train.lr");
  t.min_lr = c.get_double("train.min_lr");
  t.warmup_steps = c.get_int("train.warmup_steps");
  t.schedule = c.get_string("train.schedule");
  t.weight_decay = c.get_double("train.weight_decay");
  t.beta1 = c.get_double("train.beta1");
  t.beta2 = c.get_double("train.beta2");
  t.eps = c.get_double("train.eps");
  t.grad_clip = c.get_double("train.grad_clip");
  t.precision = c.get_string("train.precision");
  t.eval_every = c.get_int("train.eval_every");
  t.ckpt_every = c.get_int("train.ckpt_every");
  t.keep_last = c.get_int("train.keep_last");
  t.log_every = c.get_int("train.log_every");
  t.max_bad_steps = c.get_int("train.max_bad_steps");
  t.resume = c.get_string("train.resume");
  t.ema_decay = c.get_double("train.ema_decay");
  t.best_metric = c.get_string("train.best_metric");
  t.best_mode = c.get_string("train.best_mode");
  t.bucket_mb = c.get_double("dist.bucket_mb");
  t.gpu_every_s = c.get_double("obs.gpu_every_s");

  require(!t.out_dir.empty(), c, "train.out_dir", "must name a directory");
  require(t.max_steps >= 0, c, "train.max_steps", "must be >= 0");
  require(t.max_steps > 0 || t.epochs > 0, c, "train.epochs",
          "must be >= 1 when train.max_steps is 0");
  require(t.micro_batch >= 1, c, "train.micro_batch", "must be >= 1");
  require(t.global_batch >= 0, c, "train.global_batch", "must be >= 0");
  require(t.grad_accum >= 1, c, "train.grad_accum", "must be >= 1");
  require(t.weight_decay >= 0, c, "train.weight_decay", "must be >= 0");
  require(t.beta1 >= 0 && t.beta1 < 1, c, "train.beta1", "must be in [0, 1)");
  require(t.beta2 >= 0 && t.beta2 < 1, c, "train.beta2", "must be in [0, 1)");
  require(t.eps > 0, c, "train.eps", "must be > 0");
  require(t.grad_clip >= 0, c, "train.grad_clip", "must be >= 0");
  require(t.ema_decay >= 0 && t.ema_decay < 1, c, "train.ema_decay", "must be in [0, 1)");
  require(t.eval_every >= 0, c, "train.eval_every", "must be >= 0");
  require(t.ckpt_every >= 0, c, "train.ckpt_every", "must be >= 0");
  require(t.keep_last >= 0, c, "train.keep_last", "must be >= 0");
  require(t.log_every >= 1, c, "train.log_every", "must be >= 1");
  require(t.max_bad_steps >= 1, c, "train.max_bad_steps", "must be >= 1");
  require(t.bucket_mb > 0, c, "dist.bucket_mb", "must be > 0");
  require(t.gpu_every_s >= 0, c, "obs.gpu_every_s", "must be >= 0");
  return t;
}

}  // namespace tandem
