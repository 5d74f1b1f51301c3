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

namespace tandem {
class World;
}

namespace summarize {

struct InferenceSettings {
  PromptTemplate format;
  GenerateOptions generate;
  int64_t batch = 16;
  bool progress = true;  // a progress line on rank 0's console (not between training's)
};

// The positions a model of `block_size` leaves a prompt beside
// max_new_tokens new ones. Throws UsageError, naming gen.max_new_tokens, when
// the prompt template alone fills them: no dialogue would fit.
int64_t check_prompt_room(const Gpt2Tokenizer& tokenizer, const InferenceSettings& settings, int64_t block_size);

std::vector<std::string> summarize_all(tandem::World& world, GPT& model, const Gpt2Tokenizer& tokenizer,
                                       const std::vector<Example>& examples, const InferenceSettings& settings);

struct ScoredSummaries {
  std::vector<std::string> predictions;  // in the examples' order
  RougeScores mean;                      // over the examples (mean_scores)
};

// summarize_all and the mean ROUGE of its summaries against the examples',
// on every rank alike. `summarize eval` and the evaluation during training
// (SummarizeTask) both score through this, so that the two agree exactly on
// the same weights and examples.
ScoredSummaries score_summaries(tandem::World& world, GPT& model, const Gpt2Tokenizer& tokenizer,
                                const std::vector<Example>& examples, const InferenceSettings& settings, bool stemmer);

}  // namespace summarize
