#pragma once
// rouge_score's default tokenizer, byte for byte: lowercase, every run of
// characters other than a-z and 0-9 becomes a break, and with the stemmer
// tokens of more than 3 characters are Porter-stemmed.
#include <string>
#include <string_view>
#include <vector>

namespace summarize {

// `text` is UTF-8. Python lowercases before it filters, so non-ASCII letters
// vanish (they split words: "café" -> "caf") except the two whose lowercase is
// ASCII: KELVIN SIGN -> "k", and DOTTED CAPITAL I -> "i" followed by a
// combining dot, which breaks the word after the "i" ("İzmir" -> "i", "zmir").
std::vector<std::string> rouge_tokenize(std::string_view text, bool stemmer);

}  // namespace summarize
