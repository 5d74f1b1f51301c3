// summarize train: the model trained on the corpus; and summarize all: train,
// then eval on validation, then predict the test set when one is given.
#include <optional>

#include "app/command_setup.h"
#include "app/commands.h"
#include "app/inference.h"
#include "tandem/config/config.h"
#include "tandem/dist/world.h"
#include "tandem/error.h"
#include "tandem/program.h"
#include "app/eval_outputs.h"
#include "app/summarize_task.h"
#include "tandem/train/inference_setup.h"
#include "tandem/train/train_keys.h"
#include "tandem/train/trainer.h"

namespace summarize {
namespace {

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
      inference_options(config, s.tok.eot(), tandem::inference_setup(world, config, /*fixed_shapes=*/false, "").precision);
  rouge.settings.generate.sample = false;
  rouge.settings.generate.temperature = 1.0;
  rouge.settings.progress = false;
  check_prompt_room(s.tok, rouge.settings, s.spec.shape.block_size);
  rouge.stemmer = score.stemmer;
  return rouge;
}

SummarizeTask make_task(tandem::World& world, const tandem::Config& config, const Setup& s, Prepared& data) {
  return SummarizeTask(s.spec, std::move(data.train), std::move(data.val), s.tok.eot(),
                       rouge_during_training(world, config, s, data.corpus), tandem::read_keys<BatchingKeys>(config));
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

}  // namespace summarize
