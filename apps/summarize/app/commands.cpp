#include "app/commands.h"

#include <torch/torch.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>

#include "app/inference.h"
#include "app/prepare.h"
#include "app/summarize_task.h"
#include "data/load.h"
#include "data/synthetic.h"
#include "model/gpt2_hf.h"
#include "rouge/rouge.h"
#include "rouge/score_command.h"
#include "tandem/config/config.h"
#include "tandem/data/csv.h"
#include "tandem/dist/placement.h"
#include "tandem/dist/seed.h"
#include "tandem/dist/world.h"
#include "tandem/error.h"
#include "tandem/io/atomic_file.h"
#include "tandem/io/checkpoint.h"
#include "tandem/obs/log.h"
#include "tandem/train/inference_setup.h"
#include "tandem/train/train_keys.h"
#include "tandem/train/trainer.h"
#include "tokenizer/tokenize_command.h"

namespace fs = std::filesystem;

namespace summarize {
namespace {

std::string out_dir(const tandem::Config& config) { return tandem::run_settings(config).out_dir; }

// The gen.* keys' settings, generating in `precision`.
InferenceSettings inference_settings(const tandem::Config& config, int64_t eot, tandem::Precision precision) {
  InferenceSettings s;
  s.generate.precision = precision;
  s.format = PromptTemplate::parse(tandem::read_keys<PrepareKeys>(config).prompt_template);
  const GenKeys gen = tandem::read_keys<GenKeys>(config);
  s.generate.max_new_tokens = gen.max_new_tokens;
  s.generate.sample = gen.temperature > 0;
  s.generate.temperature = s.generate.sample ? gen.temperature : 1.0;
  s.generate.top_k = gen.top_k;
  s.generate.top_p = gen.top_p;
  s.generate.eot_token = eot;
  s.generate.seed = static_cast<uint64_t>(tandem::run_settings(config).seed);
  s.generate.validate();
  s.batch = gen.batch;
  return s;
}

// A model on the rank's device, and the precision it runs in there.
struct Placed {
  GPT model;
  tandem::Precision precision;
};

// Where every command's model goes, whatever it was read from: the device the
// dist.* keys put this rank on, in the precision inference_setup picks for
// `model_file` ("" for weights from elsewhere), decided and logged once.
Placed on_rank_device(tandem::World& world, const tandem::Config& config, GPT model, const std::string& model_file) {
  const tandem::InferenceSetup setup = tandem::inference_setup(world, config, /*fixed_shapes=*/false, model_file);
  model->to(setup.device);
  return {model, setup.precision};
}

// The model of a checkpoint or models/*.h5 file, on the rank's device: a
// whole model, or adapters on the base they were trained on.
Placed load_model(tandem::World& world, const tandem::Config& config, const ModelSpec& spec, const std::string& path) {
  const tandem::Checkpoint file = tandem::load_checkpoint(path);
  const bool adapters = spec.lora.enabled();
  tandem::require_frozen_base(file, adapters ? base_checksum(spec) : "");
  GPT model = adapters ? make_model(spec) : GPT(spec.shape);
  tandem::restore(file, "model", adapters ? tandem::trained_state(*model) : tandem::module_state(*model));
  return on_rank_device(world, config, model, path);
}

std::string default_checkpoint(const tandem::Config& config) {
  const std::string given = tandem::read_keys<CommandKeys>(config).checkpoint;
  if (!given.empty()) return given;
  // Naming the final model when there is none yet makes the "not found"
  // message point at the file a finished run would have.
  const std::string trained = tandem::trained_model(out_dir(config));
  return !trained.empty() ? trained : (fs::path(out_dir(config)) / "models" / "final_model.h5").string();
}

// The first n examples; all of them for 0.
std::vector<Example> first_examples(const std::vector<Example>& examples, int64_t n) {
  if (n == 0 || n >= static_cast<int64_t>(examples.size())) return examples;
  return {examples.begin(), examples.begin() + n};
}

// eval.json and the console's report: ROUGE on the validation examples
// against the first-line baseline, and a few samples.
void report_validation(tandem::World& world, const tandem::Config& config, GPT& model, const Gpt2Tokenizer& tok,
                       const Corpus& corpus, const InferenceSettings& settings) {
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
                      const Corpus& corpus, const InferenceSettings& settings) {
  const auto predictions = summarize_all(world, model, tok, corpus.test, settings);
  if (world.rank() != 0) return;
  const fs::path out = out_dir(config);
  std::vector<std::vector<std::string>> rows;
  for (size_t i = 0; i < predictions.size(); ++i) rows.push_back({corpus.test[i].id, predictions[i]});
  fs::create_directories(out);
  tandem::write_csv((out / "submission.csv").string(), {"id", "summary"}, rows);
  std::printf("submission: %zu rows in %s\n", rows.size(), (out / "submission.csv").c_str());
}

int evaluate_and_predict(tandem::World& world, const tandem::Config& config, Placed& placed, const Gpt2Tokenizer& tok,
                         const Corpus& corpus) {
  const InferenceSettings settings = inference_settings(config, tok.eot(), placed.precision);
  if (!corpus.val.empty()) report_validation(world, config, placed.model, tok, corpus, settings);
  if (!corpus.test.empty()) write_submission(world, config, placed.model, tok, corpus, settings);
  return tandem::kExitOk;
}

struct Setup {
  Gpt2Tokenizer tok;
  ModelSpec spec;
  uint64_t seed;
};

Setup setup(tandem::World& world, const tandem::Config& config) {
  return {load_tokenizer(config), model_spec(config), tandem::shared_seed(world, tandem::run_settings(config).seed)};
}

// The ROUGE evaluation during training that eval.rouge_samples asks for:
// greedy, whatever gen.temperature says, since a sampled summary would make
// the best model and early stopping a matter of luck.
std::optional<RougeDuringTraining> rouge_during_training(tandem::World& world, const tandem::Config& config,
                                                         const Setup& s, const Corpus& corpus) {
  const ScoreKeys score = tandem::read_keys<ScoreKeys>(config);
  if (score.rouge_samples == 0) return std::nullopt;
  RougeDuringTraining rouge;
  rouge.examples = first_examples(corpus.val, score.rouge_samples);
  if (rouge.examples.empty()) return std::nullopt;
  rouge.tokenizer = &s.tok;
  rouge.settings =
      inference_settings(config, s.tok.eot(), tandem::inference_setup(world, config, /*fixed_shapes=*/false, "").precision);
  rouge.settings.generate.sample = false;
  rouge.settings.generate.temperature = 1.0;
  rouge.settings.progress = false;
  check_prompt_room(s.tok, rouge.settings, s.spec.shape.block_size);
  rouge.stemmer = score.stemmer;
  return rouge;
}

SummarizeTask make_task(tandem::World& world, const tandem::Config& config, const Setup& s, Prepared& data) {
  return SummarizeTask(s.spec, std::move(data.train), std::move(data.val), s.tok.eot(),
                       rouge_during_training(world, config, s, data.corpus));
}

// Trains `task` with `c`, its shape recorded in the config every checkpoint
// carries (record_shape), so that the model files describe themselves.
int train(tandem::World& world, const tandem::Config& config, const GPTConfig& shape, SummarizeTask& task) {
  tandem::Config trained = config;
  record_shape(trained, shape);
  tandem::Trainer trainer(world, trained, task, tandem::train_settings(trained));
  return trainer.run();
}

}  // namespace

int run_train(tandem::World& world, const tandem::Config& config) {
  auto s = setup(world, config);
  auto data = prepare_data(world, config, s.tok, s.spec.shape, s.seed);
  SummarizeTask task = make_task(world, config, s, data);
  return train(world, config, s.spec.shape, task);
}

int run_all(tandem::World& world, const tandem::Config& config) {
  auto s = setup(world, config);
  auto data = prepare_data(world, config, s.tok, s.spec.shape, s.seed);
  SummarizeTask task = make_task(world, config, s, data);
  const int status = train(world, config, s.spec.shape, task);
  if (status != tandem::kExitOk) return status;
  // The best model (by train.best_metric) summarises; final weights are in models/ too.
  auto model = load_model(world, config, s.spec, default_checkpoint(config));
  return evaluate_and_predict(world, config, model, s.tok, data.corpus);
}

int run_eval(tandem::World& world, const tandem::Config& config) {
  auto s = setup(world, config);
  const std::string path = default_checkpoint(config);
  const ModelSpec spec = trained_spec(config, path);
  auto corpus = prepare_data(world, config, s.tok, spec.shape, s.seed).corpus;
  corpus.test.clear();
  auto model = load_model(world, config, spec, path);
  return evaluate_and_predict(world, config, model, s.tok, corpus);
}

int run_predict(tandem::World& world, const tandem::Config& config) {
  auto s = setup(world, config);
  const std::string path = default_checkpoint(config);
  const ModelSpec spec = trained_spec(config, path);
  auto corpus = prepare_data(world, config, s.tok, spec.shape, s.seed).corpus;
  if (corpus.test.empty() && !tandem::read_keys<CorpusKeys>(config).train_csv.empty())
    throw tandem::UsageError("predict needs data.test_csv (--test-csv)");
  corpus.val.clear();
  auto model = load_model(world, config, spec, path);
  return evaluate_and_predict(world, config, model, s.tok, corpus);
}

int run_generate(tandem::World& world, const tandem::Config& config) {
  auto tok = load_tokenizer(config);
  const CommandKeys k = tandem::read_keys<CommandKeys>(config);
  std::string prompt = k.prompt;
  const std::string& file = k.prompt_file;
  if (!file.empty()) {
    std::ifstream in(file, std::ios::binary);
    if (!in) throw tandem::UsageError("--prompt-file '" + file + "' not found");
    prompt.assign(std::istreambuf_iterator<char>(in), {});
  }
  if (prompt.empty()) throw tandem::UsageError("generate needs --prompt TEXT or --prompt-file F");
  const std::string& hf = k.hf;
  const std::string path = default_checkpoint(config);
  Placed placed = hf.empty() ? load_model(world, config, trained_spec(config, path), path)
                             : on_rank_device(world, config, load_hf(hf), "");
  const auto options = inference_settings(config, tok.eot(), placed.precision).generate;
  const auto out = generate(placed.model, {tok.encode(prompt)}, options);
  if (world.rank() == 0) std::cout << tok.decode(out.front()) << std::endl;
  return tandem::kExitOk;
}

int run_export(tandem::World& world, const tandem::Config& config) {
  const std::string dir = tandem::read_keys<CommandKeys>(config).out;
  if (dir.empty()) throw tandem::UsageError("export needs --out DIR");
  const std::string path = default_checkpoint(config);
  const ModelSpec spec = trained_spec(config, path);
  GPT model = load_model(world, config, spec, path).model;
  if (world.rank() != 0) return tandem::kExitOk;
  model->to(torch::kCPU);
  if (spec.lora.enabled()) {
    const std::string adapter = (fs::path(dir) / "adapter").string();
    export_peft_adapter(model, spec.lora, spec.init_from.substr(3), adapter);
    tandem::log::info("exported the adapters alone to ", adapter,
                      " (PEFT's adapter_config.json, adapter_model.safetensors)");
    merge_lora(model);
  }
  export_hf(model, dir);
  tandem::log::info("exported to ", dir, " (config.json, model.safetensors",
                    spec.lora.enabled() ? ", the adapters merged" : "", ")");
  return tandem::kExitOk;
}

int run_tokenize(tandem::World& world, const tandem::Config& config) {
  const CommandKeys k = tandem::read_keys<CommandKeys>(config);
  if (k.text_file.empty()) throw tandem::UsageError("tokenize needs --text-file F");
  if (world.rank() != 0) return tandem::kExitOk;
  return tokenize_command(load_tokenizer(config), k.text_file, k.decode, std::cout);
}

int run_score(tandem::World& world, const tandem::Config& config) {
  const CommandKeys k = tandem::read_keys<CommandKeys>(config);
  if (k.pred.empty() || k.ref.empty()) throw tandem::UsageError("score needs --pred P.csv --ref R.csv");
  if (world.rank() != 0) return tandem::kExitOk;
  return score_command(k.pred, k.ref, tandem::read_keys<ScoreKeys>(config).stemmer, std::cout);
}

}  // namespace summarize
