// GPT-2's tokenizer (summarize's tokenizer/gpt2_tokenizer.h) on any bytes:
// encode never fails, every id is in the vocabulary, and decode gives the
// bytes back, with "<|endoftext|>" read as text or as the special token.
#include <cstdlib>

#include "fuzz_input.h"
#include "tokenizer/gpt2_tokenizer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace tandem;
  static const summarize::Gpt2Tokenizer tokenizer = [] {
    try {
      return summarize::Gpt2Tokenizer::load(summarize::default_tokenizer_dir());
    } catch (const std::exception& error) {
      // Not a finding: the vocabulary comes from env/tokenizer.sh.
      std::fprintf(stderr, "fuzz_bpe needs GPT-2's vocabulary (env/tokenizer.sh): %s\n", error.what());
      std::exit(2);
    }
  }();
  const std::string text(reinterpret_cast<const char*>(data), size);
  for (auto special : {summarize::SpecialTokens::kAsText, summarize::SpecialTokens::kAllowed}) {
    fuzz::expect_clean([&] {
      const std::vector<int64_t> ids = tokenizer.encode(text, special);
      for (int64_t id : ids)
        if (id < 0 || id >= tokenizer.vocab_size()) fuzz::fail("encode made id " + std::to_string(id));
      if (tokenizer.decode(ids) != text) fuzz::fail("decode(encode(x)) differs from x");
    });
  }
  return 0;
}
