#include "keys.h"

#include "app/commands.h"
#include "app/inference.h"
#include "app/prepare.h"
#include "app/summarize_task.h"
#include "data/load.h"
#include "tandem/config/config.h"
#include "tandem/config/load.h"
#include "model/lora.h"
#include "tandem/config/schema.h"
#include "tandem/config/settings.h"
#include "tandem/dist/dist_keys.h"
#include "tandem/train/plan_command.h"
#include "tandem/train/train_keys.h"

namespace summarize {

namespace {

// The competition's training defaults: the course baseline, micro-batch 16 x
// accumulation 16, 500 steps of fine-tuning at a small constant-ish rate.
tandem::TrainKeys competition_train() {
  tandem::TrainKeys d;
  d.out_dir = "out-summarization";
  d.micro_batch.value = 16;
  d.grad_accum = 16;
  d.max_steps = 500;
  d.lr = 3e-5;
  d.min_lr = 3e-6;
  d.warmup_steps = 20;
  d.weight_decay = 0.1;
  d.beta2 = 0.95;
  return d;
}

// The built-in demo's defaults, over the competition's: a tiny model trained
// from scratch for a few hundred steps on a CPU.
struct DemoDefaults {
  ModelKeys model;
  tandem::TrainKeys train = competition_train();
  GenKeys gen;

  DemoDefaults() {
    model.preset = "tiny";
    train.out_dir = "out-summarization-demo";
    train.max_steps = 300;
    train.grad_accum = 1;
    train.lr = 2e-3;
    train.min_lr = 2e-4;
    train.warmup_steps = 30;
    train.eval_every = 100;
    gen.max_new_tokens = 40;
  }
};

// Sets each key whose value `demo` changes from `base`, unless a user set
// it, and adds it to `changed`.
void overlay(tandem::Config& config, const std::vector<std::pair<std::string, tandem::Value>>& base,
             const std::vector<std::pair<std::string, tandem::Value>>& demo, std::string& changed) {
  for (size_t i = 0; i < demo.size(); ++i) {
    const auto& [key, value] = demo[i];
    if (value == base[i].second || config.source(key) != "default") continue;
    config.set(key, value, "demo default");
    changed += (changed.empty() ? "" : ", ") + key + " = " + tandem::to_toml_literal(value);
  }
}

}  // namespace

tandem::Schema summarize_schema() {
  tandem::Schema s;
  tandem::add_dist_keys(s);
  tandem::add_train_keys(s, competition_train());
  tandem::declare_keys<CorpusKeys>(s);
  tandem::declare_keys<PrepareKeys>(s);
  tandem::declare_keys<BatchingKeys>(s);
  tandem::declare_keys<ModelKeys>(s);
  tandem::declare_keys<LoraKeys>(s);
  tandem::declare_keys<GenKeys>(s);
  tandem::declare_keys<ScoreKeys>(s);
  tandem::declare_keys<CommandKeys>(s);
  tandem::add_plan_keys(s);
  s.alias("--batch-size", "train.micro_batch");
  s.alias("--lr", "train.lr");
  s.alias("--max-steps", "train.max_steps");
  s.alias("--out-dir", "train.out_dir");
  s.alias("--train-csv", "data.train_csv");
  s.alias("--test-csv", "data.test_csv");
  s.alias("--checkpoint", "cmd.checkpoint");
  s.alias("--hf", "cmd.hf");
  s.alias("--examples", "cmd.examples");
  s.alias("--prompt", "cmd.prompt");
  s.alias("--prompt-file", "cmd.prompt_file");
  s.alias("--out", "cmd.out");
  s.alias("--text-file", "cmd.text_file");
  s.alias("--decode", "cmd.decode");
  s.alias("--pred", "cmd.pred");
  s.alias("--ref", "cmd.ref");
  s.alias("--stemmer", "rouge.stemmer");
  s.alias("--max-new-tokens", "gen.max_new_tokens");
  s.alias("--temperature", "gen.temperature");
  s.alias("--top-k", "gen.top_k");
  s.alias("--top-p", "gen.top_p");
  return s;
}

std::string apply_demo_defaults(tandem::Config& config) {
  if (!tandem::read_fields<CorpusKeys>(config).train_csv.empty()) return "";
  const DemoDefaults demo;
  std::string changed;
  overlay(config, tandem::key_values(ModelKeys{}), tandem::key_values(demo.model), changed);
  overlay(config, tandem::train_key_values(competition_train()), tandem::train_key_values(demo.train), changed);
  overlay(config, tandem::key_values(GenKeys{}), tandem::key_values(demo.gen), changed);
  return changed;
}

}  // namespace summarize
