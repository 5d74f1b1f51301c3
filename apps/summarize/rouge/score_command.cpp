#include "rouge/score_command.h"

#include <cstdint>
#include <ostream>
#include <string>
#include <unordered_map>
#include <vector>

#include "rouge/rouge.h"
#include "tandem/data/csv.h"
#include "tandem/error.h"
#include "tandem/obs/log.h"
#include "tandem/text/message_text.h"

namespace summarize {
namespace {

struct Rows {
  std::vector<std::string> summaries;
  std::vector<int64_t> lines;  // where each summary's row starts in the file
};

struct Summaries {
  std::string path;
  std::vector<std::string> ids;  // in file order, each once
  std::unordered_map<std::string, Rows> by_id;
};

Summaries read_summaries(const std::string& path) {
  const tandem::CsvTable table = tandem::read_csv(path);
  const size_t id_column = table.column("id");
  const size_t summary_column = table.column("summary");
  Summaries summaries;
  summaries.path = path;
  for (size_t r = 0; r < table.rows.size(); ++r) {
    const std::string& id = table.rows[r][id_column];
    auto [it, added] = summaries.by_id.try_emplace(id);
    if (added) summaries.ids.push_back(id);
    it->second.summaries.push_back(table.rows[r][summary_column]);
    it->second.lines.push_back(table.lines[r]);
  }
  return summaries;
}

// The ids of `from` that `in` lacks, in `from`'s order.
std::vector<std::string> missing(const Summaries& from, const Summaries& in) {
  std::vector<std::string> ids;
  for (const std::string& id : from.ids)
    if (!in.by_id.count(id)) ids.push_back(id);
  return ids;
}

// Every id must be scored on both sides: a dropped row would otherwise raise
// or lower the mean without a word.
void check_same_ids(const Summaries& predictions, const Summaries& references) {
  const std::vector<std::string> unpredicted = missing(references, predictions);
  const std::vector<std::string> unreferenced = missing(predictions, references);
  if (unpredicted.empty() && unreferenced.empty()) return;
  std::string message = tandem::log::cat(predictions.path, " and ", references.path, " must hold the same ids");
  if (!unpredicted.empty())
    message += tandem::log::cat("; ", unpredicted.size(), " of ", references.ids.size(),
                                " reference ids have no prediction: ", tandem::first_few(unpredicted, 5, ", ... "));
  if (!unreferenced.empty())
    message += tandem::log::cat("; ", unreferenced.size(), " of ", predictions.ids.size(),
                                " prediction ids have no reference: ", tandem::first_few(unreferenced, 5, ", ... "));
  throw tandem::UsageError(message);
}

}  // namespace

int score_command(const std::string& pred_csv, const std::string& ref_csv, bool stemmer, std::ostream& out) {
  const Summaries predictions = read_summaries(pred_csv);
  const Summaries references = read_summaries(ref_csv);
  if (predictions.ids.empty()) throw tandem::UsageError(pred_csv + ": no predictions to score");
  for (const std::string& id : predictions.ids)
    if (const Rows& rows = predictions.by_id.at(id); rows.lines.size() > 1)
      throw tandem::UsageError(tandem::log::cat(pred_csv, ":", rows.lines[1], ": id '", id,
                                                "' already has a prediction on line ", rows.lines[0],
                                                "; give one per id"));
  check_same_ids(predictions, references);

  std::vector<RougeScores> scores;
  scores.reserve(predictions.ids.size());
  for (const std::string& id : predictions.ids)
    scores.push_back(rouge_multi(references.by_id.at(id).summaries, predictions.by_id.at(id).summaries[0], stemmer));
  out << to_json(mean_scores(scores)) << "\n";
  return tandem::kExitOk;
}

}  // namespace summarize
