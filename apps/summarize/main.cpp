// apps/summarize: fine-tune GPT-2 to summarise dialogues, score with ROUGE,
// write submission.csv. `apps/summarize` alone runs the built-in demo.
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

const std::vector<tandem::Command>& commands() {
  static const std::vector<tandem::Command> table = {
      {"all", "train, eval, predict (the default)", summarize::run_all, true},
      {"train", "train only: checkpoints, models/best_model.h5, models/final_model.h5", summarize::run_train, true},
      {"eval", "ROUGE on validation with --checkpoint C (default: the run's best model) into eval.json",
       summarize::run_eval},
      {"predict", "submission.csv (id,summary) for the test file", summarize::run_predict},
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
  const tandem::Command& command = tandem::find_command(commands(), cli.positional, "all");
  // The demo's settings are for the commands that train or evaluate on its
  // corpus; the others take a model file, which carries its own shape.
  const std::string& name = command.name;
  if (name == "all" || name == "train" || name == "eval" || name == "predict") {
    const auto demo = summarize::apply_demo_defaults(cli.config);
    if (!demo.empty()) tandem::log::info("no data.train_csv: built-in demo corpus, with ", demo);
  }
  return tandem::run_command(command, world, cli.config);
}

}  // namespace

int main(int argc, char** argv) { return tandem::run_program(argc, argv, run); }
