#include "keys.h"

#include "app/inference.h"
#include "data/load.h"
#include "rouge/score_command.h"
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
  add_data_keys(s);
  s.add("data.prompt_template", std::string("\n\n### DIALOGUE:\n{dialogue}\n\n### SUMMARY:\n"),
        "text before the summary; {dialogue} is replaced by the dialogue");
  s.add("data.max_tokens", int64_t{0}, "longest training sequence; 0: the model's block size");
  s.add("data.cache_dir", std::string(""), "where tokenized data is cached; empty: ~/.cache/tandem/summarize");
  s.add("tokenizer.dir", std::string(""),
        "gpt2.tiktoken, encoder.json + vocab.bpe or vocab.json + merges.txt; empty: "
        "~/.cache/tandem/gpt2 (env/tokenizer.sh)");
  s.add("model.preset", std::string("gpt2"), "model size", {"tiny", "gpt2", "gpt2-medium", "gpt2-large", "gpt2-xl"});
  s.add("model.n_layer", int64_t{0}, "layers; 0: the preset's");
  s.add("model.n_head", int64_t{0}, "attention heads; 0: the preset's");
  s.add("model.n_embd", int64_t{0}, "embedding width; 0: the preset's");
  s.add("model.block_size", int64_t{0}, "context length; 0: the preset's");
  s.add("model.dropout", 0.0, "dropout in attention, MLP and embeddings");
  s.add("model.bias", true, "biases in linear layers and layer norms");
  s.add("model.init_from", std::string("scratch"),
        "\"scratch\", or \"hf:DIR\" for a Hugging Face GPT-2 (config.json + model.safetensors)");
  tandem::declare_keys<LoraSettings>(s);
  tandem::declare_keys<GenKeys>(s);
  s.add("rouge.stemmer", false, kScoreStemmerDoc);
  s.add("eval.rouge_samples", int64_t{200},
        "at every evaluation during training, also generate greedy summaries of the first N validation examples "
        "and score them as eval does: eval_rouge1, eval_rouge2, eval_rougeL, eval_rougeLsum (F1), which "
        "train.best_metric may name, with train.best_mode = \"max\"; 0: the loss alone");
  s.add("cmd.checkpoint", std::string(""), "checkpoint or models/*.h5 file for eval, predict, generate, export");
  s.add("cmd.examples", int64_t{0},
        "eval: score the first N validation examples only, the set eval.rouge_samples scores during training; 0: all");
  s.add("cmd.hf", std::string(""), "Hugging Face GPT-2 directory for generate");
  s.add("cmd.prompt", std::string(""), "text to continue (generate)");
  s.add("cmd.prompt_file", std::string(""), "file whose text to continue (generate)");
  s.add("cmd.out", std::string(""), "output directory (export)");
  s.add("cmd.text_file", std::string(""), "file to tokenize, one text per line (tokenize)");
  s.add("cmd.decode", false, "tokenize: read JSON id arrays and print their text");
  s.add("cmd.pred", std::string(""), std::string("score: ") + kScorePredDoc);
  s.add("cmd.ref", std::string(""), std::string("score: ") + kScoreRefDoc);
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

std::string apply_demo_defaults(tandem::Config& c) {
  if (!c.get_string("data.train_csv").empty()) return "";
  std::string changed;
  auto demo = [&](const std::string& key, const tandem::Value& value, const std::string& text) {
    if (c.source(key) != "default") return;
    c.set(key, value, "demo default");
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
