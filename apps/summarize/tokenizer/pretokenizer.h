#pragma once
// GPT-2's pre-tokenizer: the regular expression that cuts text into words,
// numbers, punctuation runs and whitespace before BPE sees it.
#include <cstddef>
#include <string_view>

struct pcre2_real_code_8;

namespace summarize {

class Pretokenizer {
 public:
  Pretokenizer();
  ~Pretokenizer();
  Pretokenizer(const Pretokenizer&) = delete;
  Pretokenizer& operator=(const Pretokenizer&) = delete;

  // The piece of `text` that starts at `pos`, which moves past it; empty at the
  // end. Safe to call from several threads. Bytes that are not valid UTF-8 never
  // join a regex match: each run of them comes back as a piece of its own.
  std::string_view next(std::string_view text, size_t& pos) const;

 private:
  pcre2_real_code_8* code_;
  bool jit_;
};

}  // namespace summarize
