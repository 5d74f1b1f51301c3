#pragma once
// Examples as token sequences: the prompt (template head + dialogue + tail),
// then, for training, the summary and <|endoftext|>. Too long a sequence loses
// the end of its dialogue, never its summary: the summary is what is learned.
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "data/example.h"

namespace summarize {

// The course baseline's layout by default: "\n\n### DIALOGUE:\n{dialogue}\n\n### SUMMARY:\n".
struct PromptTemplate {
  std::string head, tail;
  // Throws UsageError (naming data.prompt_template) when {dialogue} is missing.
  static PromptTemplate parse(const std::string& text);
};

// Sequences stored end to end, as in the HDF5 cache.
struct TokenSet {
  std::vector<int32_t> ids;
  std::vector<int64_t> offsets{0};  // sequence i is ids[offsets[i], offsets[i+1])
  std::vector<int32_t> prompt_len;  // tokens before the summary
  std::vector<int64_t> source;      // index of the example each sequence came from
  int64_t size() const { return static_cast<int64_t>(prompt_len.size()); }
  int64_t length(int64_t i) const { return offsets[i + 1] - offsets[i]; }
  void add(const std::vector<int64_t>& tokens, int64_t prompt, int64_t from);
};

struct TokenizeStats {
  int64_t truncated = 0;  // dialogues shortened to fit
  int64_t dropped = 0;    // examples whose summary alone does not fit
};

using Encode = std::function<std::vector<int64_t>(std::string_view)>;

// with_summary: prompt + summary + eot, at most max_tokens; otherwise the
// prompt alone, at most max_tokens (the caller leaves room for generation).
TokenSet tokenize(const std::vector<Example>& examples, const Encode& encode, const PromptTemplate& format,
                  int64_t max_tokens, bool with_summary, int64_t eot, TokenizeStats* stats);

void save_tokens(const std::string& path, const TokenSet& set);
TokenSet load_tokens(const std::string& path);

// A name for the cache file of these inputs: any change to the texts, the
// tokenizer, the template or the limits gives another name.
std::string cache_key(const std::vector<Example>& examples, const std::string& tokenizer_id,
                      const PromptTemplate& format, int64_t max_tokens, bool with_summary);

}  // namespace summarize
