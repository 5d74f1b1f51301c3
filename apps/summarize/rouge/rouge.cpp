#include "rouge/rouge.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <stdexcept>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "rouge/tokenize.h"

// Follows rouge_score's rouge_scorer.py function by function; where it does
// something a textbook ROUGE would not (which LCS the backtrack picks, the
// clipped hit counting in rougeLsum), the same choice is made here.
namespace summarize {
namespace {

using Tokens = std::vector<int>;
using Lines = std::vector<Tokens>;

// Token ids shared by target and prediction, so n-grams and LCS compare ints.
class Vocabulary {
 public:
  int id(const std::string& token) { return ids_.emplace(token, static_cast<int>(ids_.size())).first->second; }
  size_t size() const { return ids_.size(); }

 private:
  std::unordered_map<std::string, int> ids_;
};

// rougeLsum's sentences: the text split on '\n', empty strings dropped (a line
// of only spaces stays, with no tokens, and changes nothing).
Lines tokenize_lines(const std::string& text, bool stemmer, Vocabulary& vocab) {
  Lines lines;
  size_t begin = 0;
  while (begin <= text.size()) {
    size_t end = text.find('\n', begin);
    if (end == std::string::npos) end = text.size();
    if (end > begin) {
      Tokens& line = lines.emplace_back();
      for (const std::string& token : rouge_tokenize(std::string_view(text).substr(begin, end - begin), stemmer))
        line.push_back(vocab.id(token));
    }
    begin = end + 1;
  }
  return lines;
}

// rouge_score tokenizes the whole text for rouge1/2/L. A newline is a break to
// the tokenizer, so those tokens are the lines' tokens end to end.
Tokens concatenate(const Lines& lines) {
  Tokens all;
  for (const Tokens& line : lines) all.insert(all.end(), line.begin(), line.end());
  return all;
}

// Same operation order as scoring.fmeasure, so results agree to the last bit.
Prf prf(double precision, double recall) {
  const double f1 = precision + recall > 0 ? 2 * precision * recall / (precision + recall) : 0.0;
  return {precision, recall, f1};
}

// Each n-gram (n <= 2) as one integer, sorted: counting matches is a merge.
std::vector<uint64_t> sorted_ngrams(const Tokens& tokens, size_t n) {
  std::vector<uint64_t> keys;
  for (size_t i = 0; i + n <= tokens.size(); ++i)
    keys.push_back(n == 1 ? static_cast<uint64_t>(tokens[i])
                          : static_cast<uint64_t>(tokens[i]) << 32 | static_cast<uint32_t>(tokens[i + 1]));
  std::sort(keys.begin(), keys.end());
  return keys;
}

// Each target n-gram matches at most as often as the prediction has it: in
// two sorted lists, every common key counts min(occurrences) times, which is
// what walking both in step counts.
Prf ngram_score(const Tokens& target, const Tokens& prediction, size_t n) {
  const std::vector<uint64_t> t = sorted_ngrams(target, n), p = sorted_ngrams(prediction, n);
  long overlap = 0;
  for (size_t i = 0, j = 0; i < t.size() && j < p.size();) {
    if (t[i] < p[j]) {
      ++i;
    } else if (p[j] < t[i]) {
      ++j;
    } else {
      ++overlap, ++i, ++j;
    }
  }
  const long target_total = static_cast<long>(t.size());
  const long prediction_total = static_cast<long>(p.size());
  return prf(static_cast<double>(overlap) / std::max(prediction_total, 1L),
             static_cast<double>(overlap) / std::max(target_total, 1L));
}

// The DP table of LCS lengths of every prefix pair, ref down, can across.
class LcsTable {
 public:
  LcsTable(const Tokens& ref, const Tokens& can)
      : ref_(ref), can_(can), cols_(can.size() + 1), table_((ref.size() + 1) * cols_, 0) {
    for (size_t i = 1; i <= ref.size(); ++i)
      for (size_t j = 1; j <= can.size(); ++j)
        at(i, j) = ref[i - 1] == can[j - 1] ? at(i - 1, j - 1) + 1 : std::max(at(i - 1, j), at(i, j - 1));
  }

  int length() const { return table_.back(); }

  // Positions in ref of one LCS: the one _backtrack_norec reads out, which
  // moves left only when that keeps strictly more, and otherwise up.
  std::vector<size_t> ref_positions() const {
    std::vector<size_t> positions;
    size_t i = ref_.size(), j = can_.size();
    while (i > 0 && j > 0) {
      if (ref_[i - 1] == can_[j - 1]) {
        positions.push_back(i - 1);
        --i;
        --j;
      } else if (at(i, j - 1) > at(i - 1, j)) {
        --j;
      } else {
        --i;
      }
    }
    std::reverse(positions.begin(), positions.end());
    return positions;
  }

 private:
  int& at(size_t i, size_t j) { return table_[i * cols_ + j]; }
  int at(size_t i, size_t j) const { return table_[i * cols_ + j]; }

  const Tokens& ref_;
  const Tokens& can_;
  size_t cols_;
  std::vector<int> table_;
};

Prf lcs_score(const Tokens& target, const Tokens& prediction) {
  if (target.empty() || prediction.empty()) return {};
  const double lcs = LcsTable(target, prediction).length();
  return prf(lcs / static_cast<double>(prediction.size()), lcs / static_cast<double>(target.size()));
}

// Summary-level LCS (Lin 2004, section 3.2): each target sentence's union LCS
// against all prediction sentences, with every token counted as a hit no more
// often than it occurs in either summary (as ROUGE-1.5.5 does, not the paper).
Prf summary_lcs_score(const Lines& target, const Lines& prediction, size_t vocab_size) {
  if (target.empty() || prediction.empty()) return {};
  std::vector<long> target_left(vocab_size, 0), prediction_left(vocab_size, 0);
  long target_total = 0, prediction_total = 0;
  for (const Tokens& line : target)
    for (int t : line) ++target_left[t], ++target_total;
  for (const Tokens& line : prediction)
    for (int t : line) ++prediction_left[t], ++prediction_total;
  if (target_total == 0 || prediction_total == 0) return {};

  long hits = 0;
  for (const Tokens& ref : target) {
    std::set<size_t> union_positions;
    for (const Tokens& can : prediction) {
      const std::vector<size_t> positions = LcsTable(ref, can).ref_positions();
      union_positions.insert(positions.begin(), positions.end());
    }
    for (size_t position : union_positions) {
      const int t = ref[position];
      if (prediction_left[t] > 0 && target_left[t] > 0) {
        ++hits;
        --prediction_left[t];
        --target_left[t];
      }
    }
  }
  return prf(static_cast<double>(hits) / static_cast<double>(prediction_total),
             static_cast<double>(hits) / static_cast<double>(target_total));
}

}  // namespace

RougeScores rouge(const std::string& target, const std::string& prediction, bool stemmer) {
  Vocabulary vocab;
  const Lines target_lines = tokenize_lines(target, stemmer, vocab);
  const Lines prediction_lines = tokenize_lines(prediction, stemmer, vocab);
  const Tokens target_tokens = concatenate(target_lines);
  const Tokens prediction_tokens = concatenate(prediction_lines);
  return {
      {"rouge1", ngram_score(target_tokens, prediction_tokens, 1)},
      {"rouge2", ngram_score(target_tokens, prediction_tokens, 2)},
      {"rougeL", lcs_score(target_tokens, prediction_tokens)},
      {"rougeLsum", summary_lcs_score(target_lines, prediction_lines, vocab.size())},
  };
}

RougeScores rouge_multi(const std::vector<std::string>& targets, const std::string& prediction, bool stemmer) {
  if (targets.empty()) throw std::invalid_argument("rouge_multi: no targets");
  RougeScores best = rouge(targets[0], prediction, stemmer);
  for (size_t i = 1; i < targets.size(); ++i)
    for (const auto& [key, score] : rouge(targets[i], prediction, stemmer))
      if (score.f1 > best[key].f1) best[key] = score;
  return best;
}

RougeScores mean_scores(const std::vector<RougeScores>& per_example) {
  RougeScores sums;
  std::map<std::string, size_t> counts;
  for (const RougeScores& scores : per_example)
    for (const auto& [key, score] : scores) {
      Prf& sum = sums[key];
      sum.precision += score.precision;
      sum.recall += score.recall;
      sum.f1 += score.f1;
      ++counts[key];
    }
  for (auto& [key, sum] : sums) {
    const double n = static_cast<double>(counts[key]);
    sum = {sum.precision / n, sum.recall / n, sum.f1 / n};
  }
  return sums;
}

std::string to_json(const RougeScores& scores) {
  nlohmann::ordered_json json = nlohmann::ordered_json::object();
  for (const auto& [key, score] : scores)
    json[key] = {{"precision", score.precision}, {"recall", score.recall}, {"f1", score.f1}};
  return json.dump();
}

}  // namespace summarize
