// apps/summarize: fine-tune GPT-2 to summarise dialogues, score with ROUGE,
// write submission.csv. `apps/summarize` alone runs the built-in demo.
#include <functional>
#include <iostream>
#include <map>

#include "app/commands.h"
#include "keys.h"
#include "tandem/config/command_line.h"
#include "tandem/config/schema.h"
#include "tandem/dist/world.h"
#include "tandem/error.h"
#include "tandem/obs/log.h"
#include "tandem/program.h"
#include "tandem/train/preemption.h"

namespace {

using Command = std::function<int(tandem::World&, const tandem::Config&)>;

const std::map<std::string, Command>& commands() {
  static const std::map<std::string, Command> table = {
      {"all", summarize::run_all},           {"train", summarize::run_train},
      {"eval", summarize::run_eval},         {"predict", summarize::run_predict},
      {"generate", summarize::run_generate}, {"export", summarize::run_export},
      {"tokenize", summarize::run_tokenize}, {"score", summarize::run_score}};
  return table;
}

int run(tandem::World& world, int argc, char** argv) {
  const auto schema = summarize::summarize_schema();
  std::ostringstream quiet;
  auto cli = tandem::parse_command_line(
      argc, argv, schema,
      "apps/summarize [all|train|eval|predict|generate|export|tokenize|score] [options]\n"
      "GPT-2 dialogue summarization; with no data given, a built-in demo corpus",
      world.rank() == 0 ? std::cout : quiet);
  if (cli.help) return tandem::kExitOk;
  const std::string name = cli.positional.empty() ? "all" : cli.positional.front();
  const auto it = commands().find(name);
  if (it == commands().end() || cli.positional.size() > 1)
    throw tandem::UsageError("unknown command '" + (it == commands().end() ? name : cli.positional[1]) +
                             "': expected one of all, train, eval, predict, generate, export, "
                             "tokenize, score");
  // A preemption signal during data preparation must lead to a checkpoint
  // (at step 0) and a requeue, not to a dead job: catch it from here on.
  if (name == "all" || name == "train") tandem::install_preemption_handlers();
  const auto demo = summarize::apply_demo_defaults(cli.config);
  // Only the commands that read the data say so; generate's output is the text alone.
  const bool reads_data = name == "all" || name == "train" || name == "eval" || name == "predict";
  if (!demo.empty() && reads_data)
    tandem::log::info("no data.train_csv: built-in demo corpus, with ", demo);
  return it->second(world, cli.config);
}

}  // namespace

int main(int argc, char** argv) { return tandem::run_program(argc, argv, run); }
