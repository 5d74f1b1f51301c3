#include "app/eval_outputs.h"

#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "app/commands.h"
#include "app/inference.h"
#include "data/synthetic.h"
#include "rouge/rouge.h"
#include "tandem/config/config.h"
#include "tandem/data/csv.h"
#include "tandem/dist/world.h"
#include "tandem/io/atomic_file.h"
#include "tandem/program.h"

namespace fs = std::filesystem;

namespace summarize {
namespace {

// eval.json and the console's report: ROUGE on the validation examples
// against the first-line baseline, and a few samples.
void report_validation(tandem::World& world, const tandem::Config& config, GPT& model, const Gpt2Tokenizer& tok,
                       const Corpus& corpus, const InferenceOptions& settings) {
  const auto val = first_examples(corpus.val, tandem::read_keys<CommandKeys>(config).examples);
  const bool stem = tandem::read_keys<ScoreKeys>(config).stemmer;
  const auto scored = score_summaries(world, model, tok, val, settings, stem);
  if (world.rank() != 0) return;
  const auto& predictions = scored.predictions;
  std::vector<RougeScores> baseline;
  for (const auto& example : val) baseline.push_back(rouge(example.summary, first_line(example.dialogue), stem));
  const auto& mean = scored.mean;
  const auto base = mean_scores(baseline);
  const fs::path out = out_dir(config);
  nlohmann::ordered_json report;
  report["data"] = corpus.origin;
  report["examples"] = predictions.size();
  report["stemmer"] = stem;
  report["rouge"] = nlohmann::json::parse(to_json(mean));
  report["baseline_first_line"] = nlohmann::json::parse(to_json(base));
  auto& samples = report["samples"] = nlohmann::json::array();
  for (size_t i = 0; i < std::min<size_t>(5, predictions.size()); ++i)
    samples.push_back({{"id", val[i].id}, {"reference", val[i].summary}, {"prediction", predictions[i]}});
  fs::create_directories(out);
  tandem::write_bytes_atomically((out / "eval.json").string(), report.dump(2) + "\n");
  std::printf(
      "\nROUGE on %zu validation examples (F1): rouge1 %.4f rouge2 %.4f rougeL %.4f "
      "rougeLsum %.4f\nbaseline (first line of the dialogue): rouge1 %.4f rouge2 %.4f "
      "rougeL %.4f rougeLsum %.4f\nwritten to %s\n",
      predictions.size(), mean.at("rouge1").f1, mean.at("rouge2").f1, mean.at("rougeL").f1, mean.at("rougeLsum").f1,
      base.at("rouge1").f1, base.at("rouge2").f1, base.at("rougeL").f1, base.at("rougeLsum").f1,
      (out / "eval.json").c_str());
  std::printf("rouge1 %s the first-line baseline\n",
              mean.at("rouge1").f1 > base.at("rouge1").f1 ? "beats" : "does not beat");
  for (size_t i = 0; i < std::min<size_t>(3, predictions.size()); ++i)
    std::printf("  %s\n    reference:  %s\n    prediction: %s\n", val[i].id.c_str(), val[i].summary.c_str(),
                predictions[i].c_str());
}

void write_submission(tandem::World& world, const tandem::Config& config, GPT& model, const Gpt2Tokenizer& tok,
                      const Corpus& corpus, const InferenceOptions& settings) {
  const auto predictions = summarize_all(world, model, tok, corpus.test, settings);
  if (world.rank() != 0) return;
  const fs::path out = out_dir(config);
  std::vector<std::vector<std::string>> rows;
  for (size_t i = 0; i < predictions.size(); ++i) rows.push_back({corpus.test[i].id, predictions[i]});
  fs::create_directories(out);
  tandem::write_csv((out / "submission.csv").string(), {"id", "summary"}, rows);
  std::printf("submission: %zu rows in %s\n", rows.size(), (out / "submission.csv").c_str());
}

}  // namespace

int evaluate_and_predict(tandem::World& world, const tandem::Config& config, Placed& placed, const Gpt2Tokenizer& tok,
                         const Corpus& corpus) {
  const InferenceOptions settings = inference_options(config, tok.eot(), placed.precision);
  if (!corpus.val.empty()) report_validation(world, config, placed.model, tok, corpus, settings);
  if (!corpus.test.empty()) write_submission(world, config, placed.model, tok, corpus, settings);
  return tandem::kExitOk;
}

}  // namespace summarize
