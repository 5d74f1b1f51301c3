#pragma once
// Summaries for many dialogues at once: prompts are sharded over the ranks,
// generated in batches, and gathered back in input order on every rank; and
// their ROUGE against the references, the figure the competition judges.
#include <string>
#include <vector>

#include "data/example.h"
#include "data/tokens.h"
#include "model/generate.h"
#include "model/gpt2.h"
#include "rouge/rouge.h"
#include "tokenizer/gpt2_tokenizer.h"
#include "tandem/config/settings.h"

namespace tandem {
class Config;
class World;
}

namespace summarize {

// The gen.* keys, each declared once (tandem/config/settings.h): how
// summaries are generated, by eval, predict, generate and ROUGE during training.
struct GenKeys {
  int64_t max_new_tokens = 64;
  double temperature = 0.0;
  int64_t top_k = 0;
  double top_p = 1.0;
  int64_t batch = 16;

  template <class Self, class Visit>
  static void each_key(Self& k, Visit&& visit) {
    visit("gen.max_new_tokens", k.max_new_tokens, "longest generated summary, in tokens", tandem::at_least(0));
    visit("gen.temperature", k.temperature, "sampling temperature; 0: greedy", tandem::at_least(0));
    visit("gen.top_k", k.top_k, "sample among the k most likely tokens; 0: all", tandem::at_least(0));
    visit("gen.top_p", k.top_p, "sample from the smallest set of tokens with this much probability",
          tandem::above_up_to(0, 1));
    visit("gen.batch", k.batch, "prompts generated together per rank", tandem::at_least(1));
  }
};

struct InferenceOptions {
  PromptTemplate format;
  GenerateOptions generate;
  int64_t batch = 16;
  bool progress = true;  // a progress line on rank 0's console (not between training's)
  // Where set, the prompts at a time this rank went on at after running out
  // of device memory, for the caller's next pass (summarize_all).
  int64_t* backed_off_to = nullptr;
};

// The gen.* keys and data.prompt_template as options, generating in
// `precision` and ending a summary at `eot`; seeded by train.seed.
InferenceOptions inference_options(const tandem::Config& config, int64_t eot, tandem::Precision precision);

// The positions a model of `block_size` leaves a prompt beside
// max_new_tokens new ones. Throws UsageError, naming gen.max_new_tokens, when
// the prompt template alone fills them: no dialogue would fit.
int64_t check_prompt_room(const Gpt2Tokenizer& tokenizer, const InferenceOptions& settings, int64_t block_size);

// Each rank generates its share of the examples, longest prompts first,
// settings.batch at a time; a batch that runs out of device memory runs again
// at half the size, and the rest of the share at that size
// (tandem/train/halving_batches.h), which can change a summary only where
// another batch composition rounds differently on a GPU.
std::vector<std::string> summarize_all(tandem::World& world, GPT& model, const Gpt2Tokenizer& tokenizer,
                                       const std::vector<Example>& examples, const InferenceOptions& settings);

struct ScoredSummaries {
  std::vector<std::string> predictions;  // in the examples' order
  RougeScores mean;                      // over the examples (mean_scores)
};

// summarize_all and the mean ROUGE of its summaries against the examples',
// on every rank alike. `summarize eval` and the evaluation during training
// (SummarizeTask) both score through this, so that the two agree exactly on
// the same weights and examples.
ScoredSummaries score_summaries(tandem::World& world, GPT& model, const Gpt2Tokenizer& tokenizer,
                                const std::vector<Example>& examples, const InferenceOptions& settings, bool stemmer);

}  // namespace summarize
