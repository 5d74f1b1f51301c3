#pragma once
// `summarize score PRED REF`: ROUGE of a submission against reference
// summaries, both `id,summary` CSV files, as one line of JSON.
#include <ostream>
#include <string>

namespace summarize {

// Scores every prediction against its reference (the best of several when an
// id has more than one reference row) and prints the mean scores as
// to_json() does. Returns the exit status; throws tandem::UsageError for an
// unreadable file, a missing column, no predictions, a prediction id given
// twice, or ids on one side only (naming up to 5 of them, with counts).
int score_command(const std::string& pred_csv, const std::string& ref_csv, bool stemmer, std::ostream& out);

}  // namespace summarize
