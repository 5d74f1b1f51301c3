#include "data/load.h"

#include <algorithm>
#include <numeric>

#include "data/synthetic.h"
#include "tandem/config/config.h"
#include "tandem/config/schema.h"
#include "tandem/data/csv.h"
#include "tandem/error.h"
#include "tandem/obs/log.h"
#include "tandem/random.h"

namespace summarize {
namespace {

struct Columns {
  std::string id, text, summary;
};

std::vector<Example> read_examples(const std::string& path, const Columns& cols, bool summaries, bool skip_bad_rows) {
  tandem::CsvOptions options;
  options.skip_bad_rows = skip_bad_rows;
  const auto table = tandem::read_csv(path, options);
  if (table.skipped > 0)
    tandem::log::warn(path, ": skipped ", table.skipped,
                      " malformed rows (data.skip_bad_rows); first: ", table.first_skipped);
  const size_t id = table.column(cols.id, "data.id_column");
  const size_t text = table.column(cols.text, "data.text_column");
  const size_t summary = summaries ? table.column(cols.summary, "data.summary_column") : 0;
  std::vector<Example> out;
  out.reserve(table.rows.size());
  for (size_t r = 0; r < table.rows.size(); ++r) {
    const auto& row = table.rows[r];
    Example e{row[id], row[text], summaries ? row[summary] : ""};
    if (summaries && e.summary.empty()) {
      if (skip_bad_rows) continue;
      throw tandem::UsageError(path + ":" + std::to_string(table.lines[r]) + ": empty " + cols.summary +
                               " (set data.skip_bad_rows = true to skip such rows)");
    }
    out.push_back(std::move(e));
  }
  if (out.empty()) throw tandem::UsageError(path + ": no rows");
  return out;
}

// The split is the same on every rank and every standard library.
std::vector<size_t> shuffled(size_t n, uint64_t seed) {
  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  tandem::SplitMix64 rng(seed ^ 0x5DEECE66Dull);  // the salt keeps the splits runs have used
  tandem::shuffle(order, rng);
  return order;
}

}  // namespace

void add_data_keys(tandem::Schema& s) {
  s.add("data.train_csv", std::string(""), "training CSV (id, dialogue, summary); empty: the built-in demo corpus");
  s.add("data.val_csv", std::string(""), "validation CSV; empty: a data.val_fraction split of train");
  s.add("data.test_csv", std::string(""), "test CSV (id, dialogue) to predict into submission.csv");
  s.add("data.val_fraction", 0.05, "share of train held out for validation when data.val_csv is empty");
  s.add("data.id_column", std::string("id"), "column with the example id");
  s.add("data.text_column", std::string("dialogue"), "column with the text to summarise");
  s.add("data.summary_column", std::string("summary"), "column with the reference summary");
  s.add("data.skip_bad_rows", false, "skip and count malformed CSV rows instead of stopping");
}

Corpus load_corpus(const tandem::Config& c, uint64_t seed) {
  const std::string train = c.get_string("data.train_csv");
  if (train.empty()) {
    for (const char* key : {"data.val_csv", "data.test_csv"})
      if (!c.get_string(key).empty()) throw tandem::UsageError(std::string(key) + " is set but data.train_csv is not");
    return synthetic_corpus();
  }
  const Columns cols{c.get_string("data.id_column"), c.get_string("data.text_column"),
                     c.get_string("data.summary_column")};
  const bool skip = c.get_bool("data.skip_bad_rows");
  Corpus corpus;
  corpus.origin = train;
  auto rows = read_examples(train, cols, true, skip);
  const std::string val = c.get_string("data.val_csv");
  if (!val.empty()) {
    corpus.train = std::move(rows);
    corpus.val = read_examples(val, cols, true, skip);
  } else {
    const double fraction = c.get_double("data.val_fraction");
    if (!(fraction > 0 && fraction < 1))
      throw tandem::UsageError("data.val_fraction must be between 0 and 1 (exclusive), got " +
                               std::to_string(fraction));
    if (c.get_int("train.seed") == -1)
      throw tandem::UsageError("train.seed = -1 draws a new seed at every start, so a resumed run, eval and predict "
                               "would hold out other rows of " + train + " for validation: give train.seed a "
                               "number, or data.val_csv");
    const auto order = shuffled(rows.size(), seed);
    const size_t n_val = std::max<size_t>(1, static_cast<size_t>(fraction * rows.size()));
    if (n_val >= rows.size())
      throw tandem::UsageError(train + ": " + std::to_string(rows.size()) +
                               " rows are too few to hold out a validation split");
    for (size_t i = 0; i < order.size(); ++i) (i < n_val ? corpus.val : corpus.train).push_back(rows[order[i]]);
  }
  const std::string test = c.get_string("data.test_csv");
  if (!test.empty()) corpus.test = read_examples(test, cols, false, skip);
  return corpus;
}

}  // namespace summarize
