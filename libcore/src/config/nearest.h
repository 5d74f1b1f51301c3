#pragma once
// "Did you mean" suggestions for mistyped keys and flags.
#include <string>
#include <vector>

namespace tandem::config_detail {

// The candidate closest to `word` in edit distance (a swap of neighbours counts
// once), or "" unless it is within max(2, len(word)/3): a plausible typo, not a
// different word. Ties go to the earlier candidate.
std::string closest(const std::string& word, const std::vector<std::string>& candidates);

}  // namespace tandem::config_detail
