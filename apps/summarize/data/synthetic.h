#pragma once
// The built-in demo corpus: short dialogues in the competition's style whose
// summaries follow from who, what, when and where is said, so a small model
// can learn to summarise them on a CPU in minutes, and ROUGE shows whether it
// did. Deterministic: the same corpus on every machine and rank.
#include "data/example.h"

namespace summarize {

Corpus synthetic_corpus(int train_size = 2000, int val_size = 100, int test_size = 100);

// The trivial baseline a learned model must beat: the dialogue's first line.
std::string first_line(const std::string& dialogue);

}  // namespace summarize
