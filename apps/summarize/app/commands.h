#pragma once
// The subcommands of apps/summarize, and the keys they alone read. Each
// returns the process exit status.
#include <cstdint>
#include <string>

#include "rouge/score_command.h"
#include "tandem/config/settings.h"

namespace tandem {
class World;
}  // namespace tandem

namespace summarize {

// How generated summaries are scored, during training and by eval; each key
// declared once (tandem/config/settings.h).
struct ScoreKeys {
  bool stemmer = false;
  int64_t rouge_samples = 200;

  template <class Self, class Visit>
  static void each_key(Self& k, Visit&& visit) {
    visit("rouge.stemmer", k.stemmer, kScoreStemmerDoc, tandem::any());
    visit("eval.rouge_samples", k.rouge_samples,
          "at every evaluation during training, also generate greedy summaries of the first N validation examples "
          "and score them as eval does: eval_rouge1, eval_rouge2, eval_rougeL, eval_rougeLsum (F1), which "
          "train.best_metric may name (train.best_mode \"auto\" knows larger is better); 0: the loss alone",
          tandem::at_least(0));
  }
};

// The cmd.* keys: each command's own inputs.
struct CommandKeys {
  std::string checkpoint;
  int64_t examples = 0;
  std::string hf, prompt, prompt_file, out, text_file;
  bool decode = false;
  std::string pred, ref;

  template <class Self, class Visit>
  static void each_key(Self& k, Visit&& visit) {
    using tandem::any;
    visit("cmd.checkpoint", k.checkpoint, "checkpoint or models/*.h5 file for eval, predict, generate, export", any());
    visit("cmd.examples", k.examples,
          "eval: score the first N validation examples only, the set eval.rouge_samples scores during training; "
          "0: all",
          tandem::at_least(0));
    visit("cmd.hf", k.hf, "Hugging Face GPT-2 directory for generate", any());
    visit("cmd.prompt", k.prompt, "text to continue (generate)", any());
    visit("cmd.prompt_file", k.prompt_file, "file whose text to continue (generate)", any());
    visit("cmd.out", k.out, "output directory (export)", any());
    visit("cmd.text_file", k.text_file, "file to tokenize, one text per line (tokenize)", any());
    visit("cmd.decode", k.decode, "tokenize: read JSON id arrays and print their text", any());
    visit("cmd.pred", k.pred, std::string("score: ") + kScorePredDoc, any());
    visit("cmd.ref", k.ref, std::string("score: ") + kScoreRefDoc, any());
  }
};

// train, then eval on validation, then predict the test set when one is given.
int run_all(tandem::World& world, const tandem::Config& config);
int run_train(tandem::World& world, const tandem::Config& config);
int run_eval(tandem::World& world, const tandem::Config& config);
int run_predict(tandem::World& world, const tandem::Config& config);
int run_generate(tandem::World& world, const tandem::Config& config);
int run_export(tandem::World& world, const tandem::Config& config);
int run_tokenize(tandem::World& world, const tandem::Config& config);
int run_score(tandem::World& world, const tandem::Config& config);
// The memory plan of the job before it runs (tandem/train/plan_command.h).
int run_plan(tandem::World& world, const tandem::Config& config);

}  // namespace summarize
