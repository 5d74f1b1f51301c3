#pragma once
// The corpus a run trains on: the competition's CSV files when data.train_csv
// is given, else the built-in demo corpus.
#include <cstdint>
#include <string>

#include "data/example.h"
#include "tandem/config/settings.h"

namespace summarize {

// The data.* keys that name the CSV files and their columns, each declared
// once (tandem/config/settings.h).
struct CorpusKeys {
  std::string train_csv, val_csv, test_csv;
  double val_fraction = 0.05;
  std::string id_column = "id", text_column = "dialogue", summary_column = "summary";
  bool skip_bad_rows = false;

  template <class Self, class Visit>
  static void each_key(Self& k, Visit&& visit) {
    using tandem::any;
    visit("data.train_csv", k.train_csv, "training CSV (id, dialogue, summary); empty: the built-in demo corpus",
          any());
    visit("data.val_csv", k.val_csv, "validation CSV; empty: a data.val_fraction split of train", any());
    visit("data.test_csv", k.test_csv, "test CSV (id, dialogue) to predict into submission.csv", any());
    // Checked where it is used (load_corpus): with data.val_csv given, it stops nothing.
    visit("data.val_fraction", k.val_fraction, "share of train held out for validation when data.val_csv is empty",
          tandem::any());
    visit("data.id_column", k.id_column, "column with the example id", tandem::a_name());
    visit("data.text_column", k.text_column, "column with the text to summarise", tandem::a_name());
    visit("data.summary_column", k.summary_column, "column with the reference summary", tandem::a_name());
    visit("data.skip_bad_rows", k.skip_bad_rows, "skip and count malformed CSV rows instead of stopping", any());
  }
};

// Checks every file and column at the door (UsageError naming file, line or key).
// The validation split, when not given, is a seeded `data.val_fraction` of train.
Corpus load_corpus(const tandem::Config& config, uint64_t seed);

}  // namespace summarize
