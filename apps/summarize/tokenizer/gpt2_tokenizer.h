#pragma once
// GPT-2's tokenizer: byte-level BPE that gives the ids of OpenAI's encoder.py
// and tiktoken's "gpt2" encoding, for any bytes.
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace summarize {

// What encode() makes of the literal text "<|endoftext|>".
enum class SpecialTokens {
  kAsText,   // ordinary text, 7 tokens: text from a data set cannot forge a document end
  kAllowed,  // the token eot()
};

class Gpt2Tokenizer {
 public:
  // From encoder.json + vocab.bpe or vocab.json + merges.txt in `dir`; throws
  // tandem::UsageError naming the directory and the file missing or corrupt.
  static Gpt2Tokenizer load(const std::string& dir);

  // Safe to call from several threads at once. Bytes that are not UTF-8 are
  // encoded too (each run of them as a piece of its own), so decode(encode(x)) == x.
  std::vector<int64_t> encode(std::string_view text, SpecialTokens special = SpecialTokens::kAsText) const;
  // Throws tandem::UsageError for an id outside [0, vocab_size()).
  std::string decode(const std::vector<int64_t>& ids) const;

  int64_t eot() const;
  int64_t vocab_size() const;

 private:
  struct Impl;
  explicit Gpt2Tokenizer(std::shared_ptr<const Impl> impl) : impl_(std::move(impl)) {}
  std::shared_ptr<const Impl> impl_;  // copies share the vocabulary and the cache
};

// $TANDEM_TOKENIZER_DIR, else $XDG_CACHE_HOME/tandem/gpt2, else ~/.cache/tandem/gpt2:
// where env/tokenizer.sh puts the files.
std::string default_tokenizer_dir();

}  // namespace summarize
