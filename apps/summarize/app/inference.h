#pragma once
// Summaries for many dialogues at once: prompts are sharded over the ranks,
// generated in batches, and gathered back in input order on every rank.
#include <string>
#include <vector>

#include "data/example.h"
#include "data/tokens.h"
#include "model/generate.h"
#include "model/gpt2.h"
#include "tokenizer/gpt2_tokenizer.h"

namespace tandem {
class World;
}

namespace summarize {

struct InferenceSettings {
  PromptTemplate format;
  GenerateOptions generate;
  int64_t batch = 16;
};

std::vector<std::string> summarize_all(tandem::World& world, GPT& model, const Gpt2Tokenizer& tokenizer,
                                       const std::vector<Example>& examples, const InferenceSettings& settings);

}  // namespace summarize
