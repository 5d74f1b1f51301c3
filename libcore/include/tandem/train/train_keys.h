#pragma once
// The settings of a training run, each declared once in each_key below (key,
// field, doc, check; the field's initial value is its default), so that job
// files, scripts and tests rely on the same names in every app and --help,
// the schema and the checks agree. A new train key is a field and a line.
//
// An app that trains one model takes every key under [train]. An app that
// trains several in one job (apps/vavae: a VAE, a DiT, a judging classifier)
// gives each model a table of its own for the keys that differ by model (how
// long, how large a batch, the optimizer and its schedule); the keys of the
// run itself (seed, precision, checkpoints, resume) stay under [train].
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "tandem/config/key_names.h"
#include "tandem/config/settings.h"

namespace tandem {

// train.best_metric's value for "pick nothing": the final model is the run's.
inline constexpr const char* kNoBestMetric = "none";

struct TrainKeys {
  // The run's keys, always under [train] (gpu_every_s is obs.gpu_every_s).
  std::string out_dir = "runs/run";
  int64_t seed = 1337;
  int64_t global_batch = 0, grad_accum = 1;
  double min_lr = 0.0, eps = 1e-8;
  std::string precision = "auto";
  std::string optimizer_state = "fp32";
  std::string master_weights = "replicated";
  int64_t eval_every = 0, ckpt_every = 0, keep_last = 3, log_every = 10, max_bad_steps = 10;
  std::string resume = "auto";
  std::string best_metric = "eval_loss", best_mode = "auto";
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

  // Each setting once, as every key struct (tandem/config/settings.h), with
  // one difference: "$" stands for the model's table, in a key ("$.lr": the
  // model's key, under [train] or the model's own table) and in its doc. Any
  // other key is the run's, wherever the model's keys live.
  template <class Self, class Visit>
  static void each_key(Self& t, Visit&& visit) {
    visit("train.out_dir", t.out_dir, "run directory: config.toml, metrics.jsonl, logs/, checkpoints/, models/",
          a_name());
    visit("train.seed", t.seed, "seed for weights, sample order and augmentation; -1 picks one", any());
    visit("$.max_steps", t.max_steps, "optimizer steps to train; 0 means $.epochs epochs", at_least(0));
    visit("$.epochs", t.epochs, "passes over the training set when $.max_steps is 0", at_least(0));
    visit("$.micro_batch", t.micro_batch,
          "samples per rank per forward pass; \"auto\": the largest that divides a rank's share of train.global_batch "
          "(which must then be set) and whose memory plan fits in 90% of the least free device memory of a rank, "
          "recomputing blocks only under $.recompute = \"blocks\", or under \"auto\" when no micro-batch fits "
          "without; halved (accumulation doubled) on running out of memory in any case",
          at_least_or_auto(1));
    visit("train.global_batch", t.global_batch,
          "samples per optimizer step over all ranks; sets grad_accum when > 0", at_least(0));
    visit("train.grad_accum", t.grad_accum,
          "micro-batches accumulated per optimizer step (ignored when global_batch > 0)", at_least(1));
    visit("$.lr", t.lr, "peak learning rate", any());
    visit("train.min_lr", t.min_lr, "learning rate at the end of the cosine or linear decay", any());
    visit("$.warmup_steps", t.warmup_steps, "steps of linear warmup", any());
    visit("$.schedule", t.schedule, "learning-rate schedule after warmup",
          one_of({"constant", "cosine", "linear"}));
    visit("$.weight_decay", t.weight_decay,
          "AdamW decoupled weight decay (not applied to biases, norms or 1-D parameters)", at_least(0));
    visit("$.beta1", t.beta1, "AdamW beta1", fraction());
    visit("$.beta2", t.beta2, "AdamW beta2", fraction());
    visit("train.eps", t.eps, "AdamW epsilon", above(0));
    visit("$.grad_clip", t.grad_clip, "clip the global gradient norm to this; 0 disables", at_least(0));
    visit("$.recompute", t.recompute,
          "activation recomputation: \"blocks\" keeps only each block's input (GPT-2's and the DiT's transformer "
          "blocks, the ResNet's stages, the VAE's resolution levels) and runs the block again in backward, for about a "
          "third more compute; "
          "\"none\" keeps every activation; \"auto\": \"blocks\" only when the memory plan does not fit in 90% of the "
          "least free device memory of a rank (never for a model without an activation estimate)",
          one_of({"none", "blocks", "auto"}));
    visit("train.precision", t.precision,
          "forward precision: auto = bf16 on GPUs with compute capability >= 8, fp16 on older GPUs, fp32 on CPU",
          one_of({"auto", "fp32", "fp16", "bf16"}));
    visit("train.optimizer_state", t.optimizer_state,
          "how AdamW keeps its two moments: \"fp32\"; \"8bit\": blockwise-quantised to a byte an element with "
          "bitsandbytes' dynamic maps and an fp32 scale per 2048 elements (a quarter of the memory; tensors under "
          "4096 elements stay fp32; under dist.shard each rank keeps its slices'). A checkpoint of either form "
          "resumes under the other, converted",
          one_of({"fp32", "8bit"}));
    visit("train.master_weights", t.master_weights,
          "where the fp32 weights AdamW updates live: \"replicated\", the model's own on every rank; \"sharded\" "
          "(train.precision fp16 or bf16, dist.shard \"optimizer\" or \"gradients\"): the model's matrices are kept "
          "in the compute precision on every rank and their fp32 masters as each rank's slices in the optimizer, "
          "whose step updates them and gathers the half-precision weights (DeepSpeed's mixed-precision ZeRO); "
          "checkpoints and model files hold the fp32 masters, so either setting resumes the other's checkpoint",
          one_of({"replicated", "sharded"}));
    visit("train.eval_every", t.eval_every,
          "evaluate every N steps, and always at the end; 0: at the end of each epoch", at_least(0));
    visit("train.ckpt_every", t.ckpt_every, "checkpoint every N steps; 0: at the end only", at_least(0));
    visit("train.keep_last", t.keep_last, "checkpoints kept in checkpoints/; 0 keeps all", at_least(0));
    visit("train.log_every", t.log_every, "write a step line (loss, lr, ms) to the log file every N steps",
          at_least(1));
    visit("train.max_bad_steps", t.max_bad_steps, "skipped steps in a row before the run stops: non-finite gradients under fp32/bf16; under fp16 a "
          "non-finite loss or a loss scale below 2^-10",
          at_least(1));
    visit("train.resume", t.resume,
          "\"auto\": continue from the latest checkpoint in out_dir if any; \"none\": start fresh "
          "(refused if out_dir has checkpoints); or a checkpoint file",
          a_name());
    visit("$.ema_decay", t.ema_decay,
          "keep an exponential moving average of the weights with this decay per step (0: none); "
          "evaluation, best_metric and the model files use the average; checkpoints keep it as the set ema/",
          fraction());
    visit("$.ema_bn_batches", t.ema_bn_batches,
        "with $.ema_decay > 0: before each evaluation and model file, run this many training micro-batches per rank (at "
        "most an epoch) through the average in training mode to give its batch-norm layers their own running "
        "statistics, as SWA's update_bn does; 0: the live model's statistics",
        at_least(0));
    visit("$.early_stop_patience", t.early_stop_patience,
          "end the run, as a finished one (final and best models, reports), after this many evaluations in a row "
          "in which the best-model metric (train.best_metric, in the direction of train.best_mode) did not improve "
          "on its best by more than $.early_stop_min_delta; 0: never",
          at_least(0));
    visit("$.early_stop_min_delta", t.early_stop_min_delta,
          "the least change of the best-model metric that counts as an improvement for $.early_stop_patience",
          at_least(0));
    visit("train.best_metric", t.best_metric,
          "metric that picks models/best_model.h5; \"none\": no picking, models/final_model.h5 is the run's model",
          a_name());
    visit("train.best_mode", t.best_mode,
          "whether a smaller or larger best_metric is better; \"auto\": the metric's own direction (a loss "
          "smaller, an accuracy, AUC or ROUGE larger), for the best model and early stopping alike",
          one_of({"auto", "min", "max"}));
    visit("obs.gpu_every_s", t.gpu_every_s,
          "log each GPU's utilisation, memory and temperature this often; 0 disables", at_least(0));
    visit("obs.tensorboard", t.tensorboard,
          "also write the figures of metrics.jsonl, the GPU monitor's and the app's images as TensorBoard events "
          "in out_dir/tb",
          any());
  }
};

// Every setting under [train], with the app's `defaults`.
void add_train_keys(Schema& schema, const TrainKeys& defaults = {});
// For an app that trains several models: the run's keys under [train], none
// of the model's; each model then adds its table with add_model_keys. The
// model's keys under [train] are retired (Schema::retire): set there, they
// are refused with the keys of `model_tables` to set instead.
void add_run_keys(Schema& schema, const TrainKeys& defaults, const std::vector<std::string>& model_tables);
// The model's keys under [table]; `what` starts each doc ("train-dit").
void add_model_keys(Schema& schema, const std::string& table, const std::string& what,
                    const TrainKeys& defaults = {});

// Each setting's key, the model's under [model_table], with its value: the
// form of key_values (tandem/config/settings.h) for TrainKeys.
std::vector<std::pair<std::string, Value>> train_key_values(const TrainKeys& keys,
                                                            const std::string& model_table = "train");

// The settings of the model whose keys are under [model_table], with the
// run's from [train]. Throws UsageError naming the key for values no run
// could use.
TrainKeys train_settings(const Config& config, const std::string& model_table = "train");
// The run's settings alone (out_dir, seed, precision ...), each checked; the
// model's keep their defaults. For commands that train nothing, and in apps
// whose models' keys are not under [train].
TrainKeys run_settings(const Config& config);
// The run's settings as a config.toml or model file stored them, unchecked:
// the build that wrote it accepted them.
TrainKeys run_fields(const Config& config);

enum class Precision;
// train.master_weights = "sharded" against the other keys, once the
// precision is resolved: a UsageError that names every key it depends on
// under fp32 or dist.shard = `shard` = "none".
void check_master_weights(const TrainKeys& settings, const std::string& shard, Precision precision);
// train.micro_batch = "auto" against the global batch it splits over
// `world_size` ranks: a UsageError when train.global_batch is not set
// (`source`: where its value came from, config.source) or is no multiple of
// the ranks. Nothing for a fixed micro-batch.
void check_auto_micro_batch(const TrainKeys& settings, int world_size, const std::string& source);

}  // namespace tandem
