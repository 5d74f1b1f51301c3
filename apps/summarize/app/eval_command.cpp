// summarize eval (ROUGE on the validation examples, eval.json) and predict
// (submission.csv for the test set), from a model file.
#include "app/command_setup.h"
#include "app/commands.h"
#include "app/inference.h"
#include "tandem/config/config.h"
#include "tandem/dist/world.h"
#include "tandem/error.h"
#include "tandem/program.h"
#include "app/eval_outputs.h"
#include "data/load.h"

namespace summarize {

int run_eval(tandem::World& world, const tandem::Config& config) {
  auto s = setup(world, config);
  const std::string path = default_checkpoint(config);
  const ModelOptions spec = trained_spec(config, path);
  auto corpus = prepare_data(world, config, s.tok, spec.shape, s.seed).corpus;
  corpus.test.clear();
  auto model = load_model(world, config, spec, path);
  return evaluate_and_predict(world, config, model, s.tok, corpus);
}

int run_predict(tandem::World& world, const tandem::Config& config) {
  auto s = setup(world, config);
  const std::string path = default_checkpoint(config);
  const ModelOptions spec = trained_spec(config, path);
  auto corpus = prepare_data(world, config, s.tok, spec.shape, s.seed).corpus;
  if (corpus.test.empty() && !tandem::read_keys<CorpusKeys>(config).train_csv.empty())
    throw tandem::UsageError("predict needs data.test_csv (--test-csv)");
  corpus.val.clear();
  auto model = load_model(world, config, spec, path);
  return evaluate_and_predict(world, config, model, s.tok, corpus);
}

}  // namespace summarize
