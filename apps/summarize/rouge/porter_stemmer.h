#pragma once
// The Porter stemmer exactly as NLTK's PorterStemmer in its default
// NLTK_EXTENSIONS mode, which is what rouge_score stems with: scores only
// match the Kaggle / `evaluate` numbers if every stem does, quirks included.
#include <string>

namespace summarize {

// `word` must already be lowercase ASCII letters and digits (what the ROUGE
// tokenizer hands over); other bytes are treated as consonants, as NLTK would.
std::string porter_stem(const std::string& word);

}  // namespace summarize
