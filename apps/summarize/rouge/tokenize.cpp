#include "rouge/tokenize.h"

#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "rouge/porter_stemmer.h"

namespace summarize {
namespace {

bool starts_with_at(std::string_view s, size_t i, const char* bytes, size_t n) {
  return s.compare(i, n, std::string_view(bytes, n)) == 0;
}

// A text repeats its words, and a corpus its vocabulary: each word is stemmed
// once per thread (the stemmer rescans a word several times per step).
const std::string& stemmed(const std::string& word) {
  thread_local std::unordered_map<std::string, std::string> stems;
  auto it = stems.find(word);
  if (it == stems.end()) it = stems.emplace(word, porter_stem(word)).first;
  return it->second;
}

}  // namespace

std::vector<std::string> rouge_tokenize(std::string_view text, bool stemmer) {
  static const char kDottedCapitalI[] = "\xC4\xB0";  // U+0130
  static const char kKelvinSign[] = "\xE2\x84\xAA";  // U+212A

  std::vector<std::string> tokens;
  std::string token;
  const auto end_token = [&] {
    if (token.empty()) return;
    // rouge_score stems only words longer than 3 characters.
    tokens.push_back(stemmer && token.size() > 3 ? stemmed(token) : token);
    token.clear();
  };
  for (size_t i = 0; i < text.size();) {
    const char c = text[i];
    if ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9')) {
      token += c;
      ++i;
    } else if (c >= 'A' && c <= 'Z') {
      token += static_cast<char>(c - 'A' + 'a');
      ++i;
    } else if (starts_with_at(text, i, kKelvinSign, 3)) {
      token += 'k';
      i += 3;
    } else if (starts_with_at(text, i, kDottedCapitalI, 2)) {
      token += 'i';
      end_token();
      i += 2;
    } else {
      // Every other byte, UTF-8 continuation bytes included, is a break: a
      // multi-byte character never contains an ASCII byte.
      end_token();
      ++i;
    }
  }
  end_token();
  return tokens;
}

}  // namespace summarize
