// The commands on text files alone, on rank 0: tokenize (text to GPT-2 ids
// and back) and score (ROUGE of a predictions CSV against references).
#include <iostream>

#include "app/command_setup.h"
#include "app/commands.h"
#include "app/inference.h"
#include "tandem/config/config.h"
#include "tandem/dist/world.h"
#include "tandem/error.h"
#include "tandem/program.h"
#include "rouge/score_command.h"
#include "tokenizer/tokenize_command.h"

namespace summarize {

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
