#include "rouge/porter_stemmer.h"

#include <string>
#include <unordered_map>
#include <vector>

// Step by step as nltk/stem/porter.py (NLTK 3.x, mode NLTK_EXTENSIONS); the
// comments name where NLTK departs from Porter's paper, since those departures
// are exactly what a "cleaner" rewrite would lose.
namespace summarize {
namespace {

bool is_vowel(char c) { return c == 'a' || c == 'e' || c == 'i' || c == 'o' || c == 'u'; }

// Porter's consonant: not a vowel, and 'y' only at the start of the word or
// after a vowel, so a run of y's alternates. Given whether w[i - 1] is one.
bool consonant_after(const std::string& w, size_t i, bool previous_is_consonant) {
  if (is_vowel(w[i])) return false;
  return w[i] != 'y' || i == 0 || !previous_is_consonant;
}

// NLTK recurses back through a run of y's and rescans the word per letter;
// scanning forward once keeps a degenerate token (a model's "yyyy...")
// linear and off the stack.
bool is_consonant(const std::string& w, size_t i) {
  bool consonant = true;
  for (size_t k = 0; k <= i; ++k) consonant = consonant_after(w, k, consonant);
  return consonant;
}

// m in [C](VC){m}[V]: the number of vowel-to-consonant transitions.
int measure(const std::string& stem) {
  int m = 0;
  bool previous = true;
  for (size_t i = 0; i < stem.size(); ++i) {
    const bool consonant = consonant_after(stem, i, previous);
    if (i > 0 && !previous && consonant) ++m;
    previous = consonant;
  }
  return m;
}

bool contains_vowel(const std::string& stem) {
  bool consonant = true;
  for (size_t i = 0; i < stem.size(); ++i) {
    consonant = consonant_after(stem, i, consonant);
    if (!consonant) return true;
  }
  return false;
}

// *d
bool ends_double_consonant(const std::string& w) {
  const size_t n = w.size();
  return n >= 2 && w[n - 1] == w[n - 2] && is_consonant(w, n - 1);
}

// *o, plus NLTK's extension: a two-letter vowel-consonant stem also counts,
// so that "are", "ice" and "use" keep their final e.
bool ends_cvc(const std::string& w) {
  const size_t n = w.size();
  if (n >= 3 && is_consonant(w, n - 3) && !is_consonant(w, n - 2) && is_consonant(w, n - 1) && w[n - 1] != 'w' &&
      w[n - 1] != 'x' && w[n - 1] != 'y')
    return true;
  return n == 2 && !is_consonant(w, 0) && is_consonant(w, 1);
}

bool ends_with(const std::string& w, const std::string& suffix) {
  return w.size() >= suffix.size() && w.compare(w.size() - suffix.size(), suffix.size(), suffix) == 0;
}

std::string cut(const std::string& w, size_t n) { return w.substr(0, w.size() - n); }

// A condition sees the stem (word less suffix) and, for NLTK's rules that look
// past the suffix, the whole word. nullptr: unconditional.
using Condition = bool (*)(const std::string& word, const std::string& stem);

struct Rule {
  std::string suffix;
  std::string replacement;
  Condition condition;
};

bool positive_measure(const std::string&, const std::string& stem) { return measure(stem) > 0; }
bool measure_above_1(const std::string&, const std::string& stem) { return measure(stem) > 1; }

// NLTK's _apply_rule_list: the first rule whose suffix matches decides, and a
// failed condition ends the step without trying the rules after it.
std::string apply_first(const std::string& word, const std::vector<Rule>& rules) {
  for (const Rule& rule : rules) {
    if (!ends_with(word, rule.suffix)) continue;
    const std::string stem = cut(word, rule.suffix.size());
    if (rule.condition == nullptr || rule.condition(word, stem)) return stem + rule.replacement;
    return word;
  }
  return word;
}

std::string step1a(const std::string& word) {
  // NLTK: "dies" -> "die" where Porter gives "di" (but "flies" -> "fli").
  if (word.size() == 4 && ends_with(word, "ies")) return cut(word, 3) + "ie";
  static const std::vector<Rule> rules = {
      {"sses", "ss", nullptr}, {"ies", "i", nullptr}, {"ss", "ss", nullptr}, {"s", "", nullptr}};
  return apply_first(word, rules);
}

std::string step1b(const std::string& word) {
  // NLTK: "died" -> "die", "spied" -> "spi", before any other rule.
  if (ends_with(word, "ied")) return cut(word, 3) + (word.size() == 4 ? "ie" : "i");
  // "eed" never falls through to "ed", even when m = 0 ("feed" stays "feed").
  if (ends_with(word, "eed")) {
    const std::string stem = cut(word, 3);
    return measure(stem) > 0 ? stem + "ee" : word;
  }
  std::string stem;
  if (ends_with(word, "ed") && contains_vowel(cut(word, 2)))
    stem = cut(word, 2);
  else if (ends_with(word, "ing") && contains_vowel(cut(word, 3)))
    stem = cut(word, 3);
  else
    return word;

  if (ends_with(stem, "at") || ends_with(stem, "bl") || ends_with(stem, "iz")) return stem + "e";
  // A double consonant either loses a letter or, for l/s/z, stops the step
  // before the cvc rule below is tried.
  if (ends_double_consonant(stem)) {
    const char last = stem.back();
    return last == 'l' || last == 's' || last == 'z' ? stem : cut(stem, 1);
  }
  return measure(stem) == 1 && ends_cvc(stem) ? stem + "e" : stem;
}

std::string step1c(const std::string& word) {
  // NLTK: y -> i only after a consonant that is not the whole stem, so
  // "happy" -> "happi" but "enjoy" stays (Porter's paper asks for a vowel
  // anywhere in the stem instead).
  static const std::vector<Rule> rules = {{"y", "i", [](const std::string&, const std::string& stem) {
                                             return stem.size() > 1 && is_consonant(stem, stem.size() - 1);
                                           }}};
  return apply_first(word, rules);
}

std::string step2(const std::string& word) {
  // NLTK applies ALLI -> AL first and runs the result through step 2 again.
  if (ends_with(word, "alli") && measure(cut(word, 4)) > 0) return step2(cut(word, 4) + "al");
  static const std::vector<Rule> rules = {
      {"ational", "ate", positive_measure},
      {"tional", "tion", positive_measure},
      {"enci", "ence", positive_measure},
      {"anci", "ance", positive_measure},
      {"izer", "ize", positive_measure},
      {"bli", "ble", positive_measure},  // Porter's later "bli", not the paper's "abli"
      {"alli", "al", positive_measure},
      {"entli", "ent", positive_measure},
      {"eli", "e", positive_measure},
      {"ousli", "ous", positive_measure},
      {"ization", "ize", positive_measure},
      {"ation", "ate", positive_measure},
      {"ator", "ate", positive_measure},
      {"alism", "al", positive_measure},
      {"iveness", "ive", positive_measure},
      {"fulness", "ful", positive_measure},
      {"ousness", "ous", positive_measure},
      {"aliti", "al", positive_measure},
      {"iviti", "ive", positive_measure},
      {"biliti", "ble", positive_measure},
      {"fulli", "ful", positive_measure},
      // The l of "logi" counts towards the stem's measure, so that short
      // stems like "geo" and "theo" are shortened as "philo" is.
      {"logi", "log", [](const std::string& word, const std::string&) { return measure(cut(word, 3)) > 0; }},
  };
  return apply_first(word, rules);
}

std::string step3(const std::string& word) {
  static const std::vector<Rule> rules = {
      {"icate", "ic", positive_measure}, {"ative", "", positive_measure},  {"alize", "al", positive_measure},
      {"iciti", "ic", positive_measure}, {"ical", "ic", positive_measure}, {"ful", "", positive_measure},
      {"ness", "", positive_measure},
  };
  return apply_first(word, rules);
}

std::string step4(const std::string& word) {
  static const std::vector<Rule> rules = {
      {"al", "", measure_above_1},
      {"ance", "", measure_above_1},
      {"ence", "", measure_above_1},
      {"er", "", measure_above_1},
      {"ic", "", measure_above_1},
      {"able", "", measure_above_1},
      {"ible", "", measure_above_1},
      {"ant", "", measure_above_1},
      {"ement", "", measure_above_1},
      {"ment", "", measure_above_1},
      {"ent", "", measure_above_1},
      {"ion", "",
       [](const std::string&, const std::string& stem) {
         return measure(stem) > 1 && (stem.back() == 's' || stem.back() == 't');
       }},
      {"ou", "", measure_above_1},
      {"ism", "", measure_above_1},
      {"ate", "", measure_above_1},
      {"iti", "", measure_above_1},
      {"ous", "", measure_above_1},
      {"ive", "", measure_above_1},
      {"ize", "", measure_above_1},
  };
  return apply_first(word, rules);
}

// Unlike the other steps, both E rules are tried: (m>1) E -> and
// (m=1 and not *o) E ->.
std::string step5a(const std::string& word) {
  if (!ends_with(word, "e")) return word;
  const std::string stem = cut(word, 1);
  const int m = measure(stem);
  return m > 1 || (m == 1 && !ends_cvc(stem)) ? stem : word;
}

// (m>1 and *d and *L) -> single letter, with m taken over the word less one l.
std::string step5b(const std::string& word) {
  return ends_with(word, "ll") && measure(cut(word, 1)) > 1 ? cut(word, 1) : word;
}

}  // namespace

std::string porter_stem(const std::string& word) {
  // NLTK's table of irregular forms, mapped before any step runs.
  static const std::unordered_map<std::string, std::string> irregular = {
      {"sky", "sky"},        {"skies", "sky"},       {"dying", "die"},        {"lying", "lie"},
      {"tying", "tie"},      {"news", "news"},       {"innings", "inning"},   {"inning", "inning"},
      {"outings", "outing"}, {"outing", "outing"},   {"cannings", "canning"}, {"canning", "canning"},
      {"howe", "howe"},      {"proceed", "proceed"}, {"exceed", "exceed"},    {"succeed", "succeed"},
  };
  if (const auto it = irregular.find(word); it != irregular.end()) return it->second;
  // NLTK (like Porter's own code, unlike the paper) leaves 1- and 2-letter words.
  if (word.size() <= 2) return word;
  return step5b(step5a(step4(step3(step2(step1c(step1b(step1a(word))))))));
}

}  // namespace summarize
