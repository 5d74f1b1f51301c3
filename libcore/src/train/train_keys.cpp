#include "tandem/train/train_keys.h"

#include <string>
#include <vector>

#include "tandem/config/config.h"
#include "tandem/config/schema.h"
#include "tandem/config/settings.h"
#include "tandem/error.h"

namespace tandem {
namespace {

// Whose table a setting's key lives in (see train_keys.h).
enum class Table { Run, Model };

// Each setting, once. `$` in a doc stands for the model's table. `visit` is
// called as visit(table, name, field, doc, check) for every setting in turn;
// a name with a dot is a whole key outside [train].
template <class Settings, class Visit>
void each_setting(Settings& t, Visit&& visit) {
  visit(Table::Run, "out_dir", t.out_dir, "run directory: config.toml, metrics.jsonl, logs/, checkpoints/, models/",
        a_name());
  visit(Table::Run, "seed", t.seed, "seed for weights, sample order and augmentation; -1 picks one", any());
  visit(Table::Model, "max_steps", t.max_steps, "optimizer steps to train; 0 means $.epochs epochs", at_least(0));
  visit(Table::Model, "epochs", t.epochs, "passes over the training set when $.max_steps is 0", at_least(0));
  visit(Table::Model, "micro_batch", t.micro_batch,
        "samples per rank per forward pass; \"auto\": the largest that divides a rank's share of train.global_batch "
        "(which must then be set) and whose memory plan fits in 90% of the least free device memory of a rank, "
        "recomputing blocks only under $.recompute = \"blocks\", or under \"auto\" when no micro-batch fits "
        "without; halved (accumulation doubled) on running out of memory in any case",
        at_least_or_auto(1));
  visit(Table::Run, "global_batch", t.global_batch,
        "samples per optimizer step over all ranks; sets grad_accum when > 0", at_least(0));
  visit(Table::Run, "grad_accum", t.grad_accum,
        "micro-batches accumulated per optimizer step (ignored when global_batch > 0)", at_least(1));
  visit(Table::Model, "lr", t.lr, "peak learning rate", any());
  visit(Table::Run, "min_lr", t.min_lr, "learning rate at the end of the cosine or linear decay", any());
  visit(Table::Model, "warmup_steps", t.warmup_steps, "steps of linear warmup", any());
  visit(Table::Model, "schedule", t.schedule, "learning-rate schedule after warmup",
        one_of({"constant", "cosine", "linear"}));
  visit(Table::Model, "weight_decay", t.weight_decay,
        "AdamW decoupled weight decay (not applied to biases, norms or 1-D parameters)", at_least(0));
  visit(Table::Model, "beta1", t.beta1, "AdamW beta1", fraction());
  visit(Table::Model, "beta2", t.beta2, "AdamW beta2", fraction());
  visit(Table::Run, "eps", t.eps, "AdamW epsilon", above(0));
  visit(Table::Model, "grad_clip", t.grad_clip, "clip the global gradient norm to this; 0 disables", at_least(0));
  visit(Table::Model, "recompute", t.recompute,
        "activation recomputation: \"blocks\" keeps only each block's input (GPT-2's and the DiT's transformer "
        "blocks, the ResNet's stages, the VAE's resolution levels) and runs the block again in backward, for about a third more compute; "
        "\"none\" keeps every activation; \"auto\": \"blocks\" only when the memory plan does not fit in 90% of the "
        "least free device memory of a rank (never for a model without an activation estimate: the VAE)",
        one_of({"none", "blocks", "auto"}));
  visit(Table::Run, "precision", t.precision,
        "forward precision: auto = bf16 on GPUs with compute capability >= 8, fp16 on older GPUs, fp32 on CPU",
        one_of({"auto", "fp32", "fp16", "bf16"}));
  visit(Table::Run, "eval_every", t.eval_every,
        "evaluate every N steps, and always at the end; 0: at the end of each epoch", at_least(0));
  visit(Table::Run, "ckpt_every", t.ckpt_every, "checkpoint every N steps; 0: at the end only", at_least(0));
  visit(Table::Run, "keep_last", t.keep_last, "checkpoints kept in checkpoints/; 0 keeps all", at_least(0));
  visit(Table::Run, "log_every", t.log_every, "write a step line (loss, lr, ms) to the log file every N steps",
        at_least(1));
  visit(Table::Run, "max_bad_steps", t.max_bad_steps, "skipped steps in a row before the run stops: non-finite gradients under fp32/bf16; under fp16 a "
        "non-finite loss or a loss scale below 2^-10",
        at_least(1));
  visit(Table::Run, "resume", t.resume,
        "\"auto\": continue from the latest checkpoint in out_dir if any; \"none\": start fresh "
        "(refused if out_dir has checkpoints); or a checkpoint file",
        a_name());
  visit(Table::Model, "ema_decay", t.ema_decay,
        "keep an exponential moving average of the weights with this decay per step (0: none); "
        "evaluation, best_metric and the model files use the average; checkpoints keep it as the set ema/",
        fraction());
  visit(
      Table::Model, "ema_bn_batches", t.ema_bn_batches,
      "with $.ema_decay > 0: before each evaluation and model file, run this many training micro-batches per rank (at "
      "most an epoch) through the average in training mode to give its batch-norm layers their own running "
      "statistics, as SWA's update_bn does; 0: the live model's statistics",
      at_least(0));
  visit(Table::Model, "early_stop_patience", t.early_stop_patience,
        "end the run, as a finished one (final and best models, reports), after this many evaluations in a row "
        "in which the best-model metric (train.best_metric, in the direction of train.best_mode) did not improve "
        "on its best by more than $.early_stop_min_delta; 0: never",
        at_least(0));
  visit(Table::Model, "early_stop_min_delta", t.early_stop_min_delta,
        "the least change of the best-model metric that counts as an improvement for $.early_stop_patience",
        at_least(0));
  visit(Table::Run, "best_metric", t.best_metric,
        "metric that picks models/best_model.h5; \"none\": no picking, models/final_model.h5 is the run's model",
        a_name());
  visit(Table::Run, "best_mode", t.best_mode, "whether a smaller or larger best_metric is better",
        one_of({"min", "max"}));
  visit(Table::Run, "obs.gpu_every_s", t.gpu_every_s,
        "log each GPU's utilisation, memory and temperature this often; 0 disables", at_least(0));
  visit(Table::Run, "obs.tensorboard", t.tensorboard,
        "also write the figures of metrics.jsonl, the GPU monitor's and the app's images as TensorBoard events "
        "in out_dir/tb",
        any());
}

std::string key_of(Table table, const std::string& name, const std::string& model_table) {
  if (name.find('.') != std::string::npos) return name;
  return (table == Table::Model ? model_table : "train") + "." + name;
}

std::string doc_of(std::string doc, const std::string& model_table) {
  for (size_t at = doc.find('$'); at != std::string::npos; at = doc.find('$', at + model_table.size()))
    doc.replace(at, 1, model_table);
  return doc;
}

// Declares the settings of `tables` with their defaults; the model's keys
// under [model_table], their docs led by `what` when it is given.
void declare(Schema& s, const TrainSettings& defaults, bool run, bool model, const std::string& model_table,
             const std::string& what) {
  TrainSettings d = defaults;
  each_setting(
      d, [&](Table table, const std::string& name, const auto& field, const std::string& doc, const Check& check) {
        if (table == Table::Run ? !run : !model) return;
        const std::string text = doc_of(doc, model_table);
        s.add(key_of(table, name, model_table), default_of(field), what.empty() ? text : what + ": " + text,
              check.choices);
      });
}

}  // namespace

std::string KeyNames::operator()(const std::string& field) const {
  std::string found;
  TrainSettings names;
  each_setting(names, [&](Table table, const std::string& name, const auto&, const std::string&, const Check&) {
    if (name == field || name.substr(name.find('.') + 1) == field) found = key_of(table, name, model_table);
  });
  if (found.empty()) throw std::logic_error("no training setting '" + field + "'");
  return found;
}

void add_train_keys(Schema& schema, const TrainSettings& defaults) {
  declare(schema, defaults, true, true, "train", "");
}

void add_run_keys(Schema& schema, const TrainSettings& defaults, const std::vector<std::string>& model_tables) {
  declare(schema, defaults, true, false, "train", "");
  TrainSettings names;
  each_setting(names, [&](Table table, const std::string& name, const auto&, const std::string&, const Check&) {
    if (table != Table::Model) return;
    std::string instead;
    for (size_t i = 0; i < model_tables.size(); ++i)
      instead += (i == 0 ? "" : i + 1 == model_tables.size() ? " or " : ", ") + model_tables[i] + "." + name;
    schema.retire("train." + name, "set per model here: " + instead);
  });
}

void add_model_keys(Schema& schema, const std::string& table, const std::string& what, const TrainSettings& defaults) {
  declare(schema, defaults, false, true, table, what);
}

namespace {

// The settings of `tables` from the Config, each checked when `checked`; the
// others keep their defaults.
TrainSettings read_settings(const Config& config, const std::string& model_table, bool run, bool model,
                            bool checked = true) {
  TrainSettings t;
  t.key.model_table = model_table;
  each_setting(t, [&](Table table, const std::string& name, auto& field, const std::string&, const Check& check) {
    if (table == Table::Run ? !run : !model) return;
    const std::string key = key_of(table, name, model_table);
    read_field(config, key, field);
    if (checked) require(config, key, field, check);
  });
  return t;
}

}  // namespace

TrainSettings run_settings(const Config& config) { return read_settings(config, "train", true, false); }
TrainSettings run_fields(const Config& config) { return read_settings(config, "train", true, false, false); }

TrainSettings train_settings(const Config& config, const std::string& model_table) {
  TrainSettings t = read_settings(config, model_table, true, true);
  if (t.max_steps == 0 && t.epochs == 0)
    throw UsageError(t.key("epochs") + " must be >= 1 when " + t.key("max_steps") + " is 0 (" +
                     config.source(t.key("epochs")) + ")");
  if (t.ema_bn_batches > 0 && t.ema_decay == 0)
    throw UsageError(t.key("ema_bn_batches") + " = " + std::to_string(t.ema_bn_batches) +
                     " gives the weights' average batch-norm statistics of its own, but there is no average: set " +
                     t.key("ema_decay") + " > 0, or " + t.key("ema_bn_batches") + " = 0 (" +
                     config.source(t.key("ema_bn_batches")) + ")");
  return t;
}

}  // namespace tandem
