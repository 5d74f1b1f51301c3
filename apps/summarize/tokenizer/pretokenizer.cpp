#include "tokenizer/pretokenizer.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <memory>
#include <stdexcept>
#include <string>

namespace summarize {
namespace {

// OpenAI's pattern, 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+,
// with \s spelt out as Unicode's White_Space, which is what \s means to the
// Python `regex` module (encoder.py) and to Rust's regex (tiktoken). PCRE2's \s
// would add U+180E and JavaScript's (gpt-3-encoder) adds U+FEFF and drops U+0085.
#define TANDEM_WS                                                                          \
  "\\t\\n\\x{0B}\\f\\r\\x{20}\\x{85}\\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}" \
  "\\x{202F}\\x{205F}\\x{3000}"
// clang-format off
constexpr const char kPattern[] =
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+"
    "| ?[^" TANDEM_WS "\\p{L}\\p{N}]+"
    "|[" TANDEM_WS "]+(?![^" TANDEM_WS "])"
    "|[" TANDEM_WS "]+";
// clang-format on
#undef TANDEM_WS

std::string pcre2_message(int code) {
  PCRE2_UCHAR buffer[256];
  pcre2_get_error_message(code, buffer, sizeof buffer);
  return reinterpret_cast<const char*>(buffer);
}

struct MatchDataDeleter {
  void operator()(pcre2_match_data* data) const { pcre2_match_data_free(data); }
};

}  // namespace

Pretokenizer::Pretokenizer() {
  int error = 0;
  PCRE2_SIZE offset = 0;
  // MATCH_INVALID_UTF: byte-level BPE must take any bytes, and without it PCRE2
  // rejects a subject that is not valid UTF-8 outright.
  code_ = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(kPattern), PCRE2_ZERO_TERMINATED,
                        PCRE2_UTF | PCRE2_MATCH_INVALID_UTF, &error, &offset, nullptr);
  if (!code_) throw std::logic_error("GPT-2 pattern: " + pcre2_message(error));
  // Where JIT is unavailable (some CPUs, W^X policies) the interpreter gives the same matches.
  jit_ = pcre2_jit_compile(code_, PCRE2_JIT_COMPLETE) == 0;
}

Pretokenizer::~Pretokenizer() { pcre2_code_free(code_); }

std::string_view Pretokenizer::next(std::string_view text, size_t& pos) const {
  if (pos >= text.size()) return {};
  // Match data is scratch space written by every match: one per thread.
  thread_local std::unique_ptr<pcre2_match_data, MatchDataDeleter> data(pcre2_match_data_create(1, nullptr));
  const auto subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  const int rc = jit_ ? pcre2_jit_match(code_, subject, text.size(), pos, 0, data.get(), nullptr)
                      : pcre2_match(code_, subject, text.size(), pos, 0, data.get(), nullptr);
  size_t start = text.size(), end = text.size();
  if (rc >= 0) {
    const PCRE2_SIZE* ovector = pcre2_get_ovector_pointer(data.get());
    start = ovector[0];
    end = ovector[1];
  } else if (rc != PCRE2_ERROR_NOMATCH) {
    throw std::runtime_error("GPT-2 pre-tokenizer: " + pcre2_message(rc));
  }
  if (start > pos) end = start;  // the invalid bytes before the match come first
  const std::string_view piece = text.substr(pos, end - pos);
  pos = end;
  return piece;
}

}  // namespace summarize
