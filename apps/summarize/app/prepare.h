#pragma once
// What every command that touches data needs: the tokenizer, the model's
// shape, the corpus and its token sequences, built once per input and cached.
#include <optional>
#include <string>

#include "data/example.h"
#include "data/tokens.h"
#include "model/gpt2.h"
#include "tandem/config/settings.h"
#include "tokenizer/gpt2_tokenizer.h"

namespace tandem {
class Config;
class World;
}  // namespace tandem

namespace summarize {

// The keys that say how the corpus becomes token sequences, each declared
// once (tandem/config/settings.h).
struct PrepareKeys {
  std::string prompt_template = "\n\n### DIALOGUE:\n{dialogue}\n\n### SUMMARY:\n";
  int64_t max_tokens = 0;
  std::string cache_dir, tokenizer_dir;

  template <class Self, class Visit>
  static void each_key(Self& k, Visit&& visit) {
    visit("data.prompt_template", k.prompt_template, "text before the summary; {dialogue} is replaced by the dialogue",
          tandem::any());
    visit("data.max_tokens", k.max_tokens, "longest training sequence; 0: the model's block size", tandem::at_least(0));
    visit("data.cache_dir", k.cache_dir, "where tokenized data is cached; empty: ~/.cache/tandem/summarize",
          tandem::any());
    visit("tokenizer.dir", k.tokenizer_dir,
          "gpt2.tiktoken, encoder.json + vocab.bpe or vocab.json + merges.txt; empty: "
          "~/.cache/tandem/gpt2 (env/tokenizer.sh)",
          tandem::any());
  }
};

Gpt2Tokenizer load_tokenizer(const tandem::Config& config);

// What builds a run's model.
struct ModelOptions {
  GPTConfig shape;
  std::string init_from = "scratch";  // or "hf:DIR"
  LoraKeys lora;                  // the model.lora keys
};

// The preset with explicit sizes on top, or a Hugging Face model's own
// shape; model.init_from; LoRA's settings, validated against the shape, and
// refused without a Hugging Face base to adapt.
ModelOptions model_options(const tandem::Config& config);
// Writes `shape`'s sizes into `config`'s model.* keys, so that the config a
// checkpoint carries says the model's shape without its preset or the
// Hugging Face folder it started from.
void record_shape(tandem::Config& config, const GPTConfig& shape);
// The model in the checkpoint or models/*.h5 file at `path`, from the config
// it carries; `config`'s model.* keys for a file that carries none. A
// whole model is rebuilt from its recorded shape; adapters need their base,
// model.init_from as recorded. Throws UsageError for a missing file.
ModelOptions trained_spec(const tandem::Config& config, const std::string& path);

struct Prepared {
  Corpus corpus;
  TokenSet train, val;
  PromptTemplate format;
  int64_t max_tokens = 0;
};

// Loads and tokenizes the corpus. The token cache is built by rank 0 while the
// others wait, then read by all.
Prepared prepare_data(tandem::World& world, const tandem::Config& config, const Gpt2Tokenizer& tokenizer,
                      const GPTConfig& model, uint64_t seed);

}  // namespace summarize
