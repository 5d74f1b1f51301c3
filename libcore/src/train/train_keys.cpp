#include "tandem/train/train_keys.h"

#include <string>
#include <vector>

#include "tandem/config/config.h"
#include "tandem/config/schema.h"
#include "tandem/config/settings.h"
#include "tandem/error.h"
#include "tandem/train/precision.h"

namespace tandem {
namespace {

// "$.lr": the model's key (train_keys.h).
bool is_model_key(const std::string& key) { return key.rfind("$.", 0) == 0; }

// `text` with "$" standing for the model's table.
std::string in_table(std::string text, const std::string& model_table) {
  for (size_t at = text.find('$'); at != std::string::npos; at = text.find('$', at + model_table.size()))
    text.replace(at, 1, model_table);
  return text;
}

// Declares the run's keys, the model's, or both, with their defaults; the
// model's under [model_table], their docs led by `what` when it is given.
void declare(Schema& s, TrainKeys defaults, bool run, bool model, const std::string& model_table,
             const std::string& what) {
  TrainKeys::each_key(
      defaults, [&](const std::string& key, const auto& field, const std::string& doc, const Check& check) {
        if (is_model_key(key) ? !model : !run) return;
        const std::string text = in_table(doc, model_table);
        s.add(in_table(key, model_table), default_of(field), what.empty() ? text : what + ": " + text, check.choices);
      });
}

}  // namespace

std::string KeyNames::operator()(const std::string& field) const {
  std::string found;
  TrainKeys names;
  TrainKeys::each_key(names, [&](const std::string& key, const auto&, const std::string&, const Check&) {
    if (key == field || key.substr(key.find('.') + 1) == field) found = in_table(key, model_table);
  });
  if (found.empty()) throw std::logic_error("no training setting '" + field + "'");
  return found;
}

std::vector<std::pair<std::string, Value>> train_key_values(const TrainKeys& keys, const std::string& model_table) {
  std::vector<std::pair<std::string, Value>> values;
  for (auto& [key, value] : key_values(keys)) values.emplace_back(in_table(key, model_table), std::move(value));
  return values;
}

void add_train_keys(Schema& schema, const TrainKeys& defaults) {
  declare(schema, defaults, true, true, "train", "");
}

void add_run_keys(Schema& schema, const TrainKeys& defaults, const std::vector<std::string>& model_tables) {
  declare(schema, defaults, true, false, "train", "");
  TrainKeys names;
  TrainKeys::each_key(names, [&](const std::string& key, const auto&, const std::string&, const Check&) {
    if (!is_model_key(key)) return;
    const std::string name = key.substr(2);
    std::string instead;
    for (size_t i = 0; i < model_tables.size(); ++i)
      instead += (i == 0 ? "" : i + 1 == model_tables.size() ? " or " : ", ") + model_tables[i] + "." + name;
    schema.retire("train." + name, "set per model here: " + instead);
  });
}

void add_model_keys(Schema& schema, const std::string& table, const std::string& what, const TrainKeys& defaults) {
  declare(schema, defaults, false, true, table, what);
}

namespace {

// The settings of `tables` from the Config, each checked when `checked`; the
// others keep their defaults.
TrainKeys read_settings(const Config& config, const std::string& model_table, bool run, bool model,
                            bool checked = true) {
  TrainKeys t;
  t.key.model_table = model_table;
  TrainKeys::each_key(t, [&](const std::string& declared, auto& field, const std::string&, const Check& check) {
    if (is_model_key(declared) ? !model : !run) return;
    const std::string key = in_table(declared, model_table);
    read_field(config, key, field);
    if (checked) require(config, key, field, check);
  });
  return t;
}

}  // namespace

TrainKeys run_settings(const Config& config) { return read_settings(config, "train", true, false); }
TrainKeys run_fields(const Config& config) { return read_settings(config, "train", true, false, false); }

TrainKeys train_settings(const Config& config, const std::string& model_table) {
  TrainKeys t = read_settings(config, model_table, true, true);
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

void check_master_weights(const TrainKeys& settings, const std::string& shard, Precision precision) {
  if (settings.master_weights != "sharded") return;
  const std::string key = settings.key("master_weights");
  if (precision == Precision::FP32)
    throw UsageError(key + " = \"sharded\" keeps the working weights in half precision, and " +
                     settings.key("precision") + " = \"" + settings.precision +
                     "\" computes in fp32 here: set it to \"bf16\" or \"fp16\", or " + key + " = \"replicated\"");
  if (shard == "none")
    throw UsageError(key +
                     " = \"sharded\" keeps the fp32 masters in the optimizer's shards, and dist.shard = \"none\": "
                     "set dist.shard = \"gradients\" (or \"optimizer\"), or " +
                     key + " = \"replicated\"");
}

void check_auto_micro_batch(const TrainKeys& settings, int world_size, const std::string& source) {
  const KeyNames& key = settings.key;
  if (!settings.micro_batch.automatic) return;
  if (settings.global_batch <= 0)
    throw UsageError(key("micro_batch") + " = \"auto\" splits a rank's share of " + key("global_batch") +
                     ", which is not set (" + source + "): set it to the samples per optimizer step over all ranks");
  if (settings.global_batch % world_size != 0)
    throw UsageError(key("global_batch") + " = " + std::to_string(settings.global_batch) +
                     " must be a multiple of the " + std::to_string(world_size) + " ranks for " + key("micro_batch") +
                     " = \"auto\" to split");
}

}  // namespace tandem
