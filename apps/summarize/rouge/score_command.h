#pragma once
// `summarize score PRED REF`: ROUGE of a submission against reference
// summaries, both `id,summary` CSV files, as one line of JSON.
#include <ostream>
#include <string>

namespace summarize {

// What score's inputs mean, said once for summarize's keys and apps/rouge's
// flags, which name the same three things.
inline constexpr const char* kScorePredDoc = "predictions CSV (id,summary), one row per id";
inline constexpr const char* kScoreRefDoc =
    "references CSV (id,summary), one or more rows per id (the best one counts)";
inline constexpr const char* kScoreStemmerDoc =
    "Porter-stem words longer than 3 letters before ROUGE, as rouge-score's use_stemmer";

// Scores every prediction against its reference (the best of several when an
// id has more than one reference row) and prints the mean scores as
// to_json() does. Returns the exit status; throws tandem::UsageError for an
// unreadable file, a missing column, no predictions, a prediction id given
// twice, or ids on one side only (naming up to 5 of them, with counts).
int score_command(const std::string& pred_csv, const std::string& ref_csv, bool stemmer, std::ostream& out);

}  // namespace summarize
