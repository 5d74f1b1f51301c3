#pragma once
// The corpus a run trains on: the competition's CSV files when data.train_csv
// is given, else the built-in demo corpus.
#include <cstdint>

#include "data/example.h"

namespace tandem {
class Config;
class Schema;
}  // namespace tandem

namespace summarize {

void add_data_keys(tandem::Schema& schema);
// Checks every file and column at the door (UsageError naming file, line or key).
// The validation split, when not given, is a seeded `data.val_fraction` of train.
Corpus load_corpus(const tandem::Config& config, uint64_t seed);

}  // namespace summarize
