// Job files, --set overrides and flags (config/load.h, config/command_line.h)
// over summarize's schema, which has every shared key. The input is a TOML
// job file, optionally followed by a line "#--args" and then one command-line
// argument per line (--set train.lr=3e-4, --batch-size, 4, ...). The same
// text also goes through merge_text, the way a model file's config is read.
#include <sstream>
#include <string>
#include <vector>

#include "fuzz_input.h"
#include "keys.h"
#include "tandem/config/command_line.h"
#include "tandem/config/load.h"
#include "tandem/config/schema.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace tandem;
  static const Schema schema = summarize::summarize_schema();
  const std::string input(reinterpret_cast<const char*>(data), size);
  const size_t split = input.find("\n#--args\n");
  const std::string toml = input.substr(0, split);
  const std::string path = fuzz::write_input(reinterpret_cast<const uint8_t*>(toml.data()), toml.size(), "job.toml");

  std::vector<std::string> args = {"summarize", "--config", path};
  if (split != std::string::npos) {
    std::istringstream lines(input.substr(split + 9));
    for (std::string line; std::getline(lines, line);) args.push_back(line);
  }
  std::vector<const char*> argv;
  for (const std::string& arg : args) argv.push_back(arg.c_str());
  fuzz::expect_clean([&] {
    std::ostringstream help;
    parse_command_line(static_cast<int>(argv.size()), argv.data(), schema, "fuzz", help);
  });
  fuzz::expect_clean([&] {
    Config config(schema);
    merge_text(config, toml, "model.h5");
  });
  return 0;
}
