#include "keys.h"

#include "app/commands.h"
#include "app/inference.h"
#include "app/prepare.h"
#include "data/load.h"
#include "tandem/config/config.h"
#include "tandem/config/load.h"
#include "model/lora.h"
#include "tandem/config/schema.h"
#include "tandem/config/settings.h"
#include "tandem/dist/dist_keys.h"
#include "tandem/train/train_keys.h"

namespace summarize {

tandem::Schema summarize_schema() {
  tandem::Schema s;
  tandem::add_dist_keys(s);
  tandem::TrainSettings d;
  // The course baseline: micro batch 16, accumulation 16, 500 iterations of
  // fine-tuning at a small constant-ish rate.
  d.out_dir = "out-summarization";
  d.micro_batch.value = 16;
  d.grad_accum = 16;
  d.max_steps = 500;
  d.lr = 3e-5;
  d.min_lr = 3e-6;
  d.warmup_steps = 20;
  d.weight_decay = 0.1;
  d.beta2 = 0.95;
  tandem::add_train_keys(s, d);
  tandem::declare_keys<CorpusKeys>(s);
  tandem::declare_keys<PrepareKeys>(s);
  tandem::declare_keys<ModelKeys>(s);
  tandem::declare_keys<LoraSettings>(s);
  tandem::declare_keys<GenKeys>(s);
  tandem::declare_keys<ScoreKeys>(s);
  tandem::declare_keys<CommandKeys>(s);
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
  std::string changed;
  auto demo = [&](const std::string& key, const tandem::Value& value, const std::string& text) {
    if (config.source(key) != "default") return;
    config.set(key, value, "demo default");
    changed += (changed.empty() ? "" : ", ") + key + " = " + text;
  };
  demo("model.preset", std::string("tiny"), "tiny");
  demo("train.max_steps", int64_t{300}, "300");
  demo("train.micro_batch", int64_t{16}, "16");
  demo("train.grad_accum", int64_t{1}, "1");
  demo("train.lr", 2e-3, "2e-3");
  demo("train.min_lr", 2e-4, "2e-4");
  demo("train.warmup_steps", int64_t{30}, "30");
  demo("train.eval_every", int64_t{100}, "100");
  demo("train.out_dir", std::string("out-summarization-demo"), "out-summarization-demo");
  demo("gen.max_new_tokens", int64_t{40}, "40");
  return changed;
}

}  // namespace summarize
