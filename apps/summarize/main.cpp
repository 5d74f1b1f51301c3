// apps/summarize: fine-tune GPT-2 to summarise dialogues, score with ROUGE,
// write submission.csv. `apps/summarize` alone runs the built-in demo.
#include <functional>
#include <iostream>
#include <sstream>
#include <vector>

#include "app/commands.h"
#include "keys.h"
#include "tandem/commands.h"
#include "tandem/config/command_line.h"
#include "tandem/config/schema.h"
#include "tandem/dist/world.h"
#include "tandem/error.h"
#include "tandem/obs/log.h"
#include "tandem/program.h"

namespace {

using Run = std::function<int(tandem::World&, const tandem::Config&)>;

// A command that trains or evaluates on the corpus: given no data, it takes
// the built-in demo's, with the demo's settings. The others take a model
// file, which carries its own shape.
Run on_corpus(Run run) {
  return [run](tandem::World& world, const tandem::Config& given) {
    tandem::Config c = given;
    const auto demo = summarize::apply_demo_defaults(c);
    if (!demo.empty()) tandem::log::info("no data.train_csv: built-in demo corpus, with ", demo);
    return run(world, c);
  };
}

const std::vector<tandem::Command>& commands() {
  static const std::vector<tandem::Command> table = {
      {"all", "train, eval, predict (the default)", on_corpus(summarize::run_all), true},
      {"train", "train only: checkpoints, models/best_model.h5, models/final_model.h5", on_corpus(summarize::run_train),
       true},
      {"plan", "[--gpus t4x2] [--shard all] [--data]: will the job fit; its memory plan a rank, before it runs",
       on_corpus(summarize::run_plan)},
      {"eval", "ROUGE on validation with --checkpoint C (default: the run's best model) into eval.json",
       on_corpus(summarize::run_eval)},
      {"predict", "submission.csv (id,summary) for the test file", on_corpus(summarize::run_predict)},
      {"generate", "continues --prompt TEXT (or --prompt-file F) from --checkpoint C or --hf DIR",
       summarize::run_generate},
      {"export", "--checkpoint C --out DIR: config.json + model.safetensors for transformers", summarize::run_export},
      {"tokenize", "--text-file F [--decode]: GPT-2 token ids per line, as JSON", summarize::run_tokenize},
      {"score", "--pred P.csv --ref R.csv [--stemmer]: ROUGE of two id,summary files", summarize::run_score}};
  return table;
}

int run(tandem::World& world, int argc, char** argv) {
  const auto schema = summarize::summarize_schema();
  std::ostringstream quiet;
  auto cli = tandem::parse_command_line(argc, argv, schema,
                                        "apps/summarize [COMMAND] [options]\n"
                                        "GPT-2 dialogue summarization; with no data given, a built-in demo corpus\n" +
                                            tandem::commands_help(commands()),
                                        world.rank() == 0 ? std::cout : quiet);
  if (cli.help) return tandem::kExitOk;
  return tandem::run_command(tandem::find_command(commands(), cli.positional, "all"), world, cli.config);
}

}  // namespace

int main(int argc, char** argv) { return tandem::run_program(argc, argv, run); }
