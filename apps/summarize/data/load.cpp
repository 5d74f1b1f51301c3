#include "data/load.h"

#include <algorithm>
#include <numeric>

#include "data/synthetic.h"
#include "tandem/config/config.h"
#include "tandem/data/csv.h"
#include "tandem/error.h"
#include "tandem/train/train_keys.h"
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

Corpus load_corpus(const tandem::Config& config, uint64_t seed) {
  const CorpusKeys k = tandem::read_keys<CorpusKeys>(config);
  const std::string& train = k.train_csv;
  if (train.empty()) {
    if (!k.val_csv.empty()) throw tandem::UsageError("data.val_csv is set but data.train_csv is not");
    if (!k.test_csv.empty()) throw tandem::UsageError("data.test_csv is set but data.train_csv is not");
    return synthetic_corpus();
  }
  const Columns cols{k.id_column, k.text_column, k.summary_column};
  const bool skip = k.skip_bad_rows;
  Corpus corpus;
  corpus.origin = train;
  auto rows = read_examples(train, cols, true, skip);
  if (!k.val_csv.empty()) {
    corpus.train = std::move(rows);
    corpus.val = read_examples(k.val_csv, cols, true, skip);
  } else {
    const double fraction = k.val_fraction;
    tandem::require(config, "data.val_fraction", fraction, tandem::strictly_between(0, 1));
    if (tandem::run_settings(config).seed == -1)
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
  if (!k.test_csv.empty()) corpus.test = read_examples(k.test_csv, cols, false, skip);
  return corpus;
}

}  // namespace summarize
