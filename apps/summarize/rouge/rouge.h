#pragma once
// ROUGE-1, ROUGE-2, ROUGE-L and ROUGE-Lsum with the semantics of Google's
// rouge_score package (what Kaggle and Hugging Face `evaluate` report), so a
// number printed here can be compared with a leaderboard's.
#include <map>
#include <string>
#include <vector>

namespace summarize {

struct Prf {
  double precision = 0;
  double recall = 0;
  double f1 = 0;  // 2PR / (P + R), 0 when P + R is 0
};

// Keyed by kRougeNames.
using RougeScores = std::map<std::string, Prf>;
inline const std::vector<std::string> kRougeNames = {"rouge1", "rouge2", "rougeL", "rougeLsum"};

// Target (the reference) first, as rouge_score's score(). rougeLsum takes
// sentences to be the lines of each text.
RougeScores rouge(const std::string& target, const std::string& prediction, bool stemmer);

// Several references for one prediction: per metric, the reference with the
// highest F1 (the first on ties), as rouge_score's score_multi(). Throws
// std::invalid_argument for no targets.
RougeScores rouge_multi(const std::vector<std::string>& targets, const std::string& prediction, bool stemmer);

// The mean of each metric over examples; rouge_score's BootstrapAggregator
// reports the median of resampled means as "mid", which estimates the same
// number without being reproducible. Empty for no examples.
RougeScores mean_scores(const std::vector<RougeScores>& per_example);

// One line: {"rouge1":{"precision":..,"recall":..,"f1":..},...}.
std::string to_json(const RougeScores& scores);

}  // namespace summarize
