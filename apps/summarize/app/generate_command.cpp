// summarize generate: a continuation of one prompt, from the run's model or
// a Hugging Face GPT-2.
#include <fstream>
#include <iostream>
#include <iterator>

#include "app/command_setup.h"
#include "app/commands.h"
#include "app/inference.h"
#include "tandem/config/config.h"
#include "tandem/dist/world.h"
#include "tandem/error.h"
#include "tandem/program.h"
#include "model/gpt2_hf.h"

namespace summarize {

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
  const auto options = inference_options(config, tok.eot(), placed.precision).generate;
  const auto out = generate(placed.model, {tok.encode(prompt)}, options);
  if (world.rank() == 0) std::cout << tok.decode(out.front()) << std::endl;
  return tandem::kExitOk;
}

}  // namespace summarize
