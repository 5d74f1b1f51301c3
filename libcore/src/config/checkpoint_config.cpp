#include "tandem/config/checkpoint_config.h"

#include <algorithm>

#include "tandem/config/load.h"
#include "tandem/error.h"
#include "tandem/io/checkpoint.h"
#include "tandem/io/h5file.h"

namespace tandem {
namespace {

// The state key (a root attribute in the file) the Trainer writes the config under.
const char* const kConfigKey = "config";

[[noreturn]] void throw_no_config(const std::string& path) {
  throw UsageError(path + ": carries no config (no '" + std::string(kConfigKey) +
                   "' in its state): not a model saved by a training run");
}

Config parse(const Schema& schema, const std::string& text, const std::string& path) {
  Config config(schema);
  // Messages then read "model.h5 (its config):12: unknown key ...".
  merge_text(config, text, path + " (its config)");
  return config;
}

}  // namespace

bool has_config(const Checkpoint& checkpoint) { return checkpoint.state.count(kConfigKey) > 0; }

bool has_config(const std::string& path) { return H5File(path).has_attr("", kConfigKey); }

Config config_from_checkpoint(const Schema& schema, const Checkpoint& checkpoint) {
  if (!has_config(checkpoint)) throw_no_config(checkpoint.path);
  return parse(schema, checkpoint.get_string(kConfigKey), checkpoint.path);
}

Config config_from_checkpoint(const Schema& schema, const std::string& path) {
  const H5File file(path);
  if (!file.has_attr("", kConfigKey)) throw_no_config(path);
  return parse(schema, file.attr_string("", kConfigKey), path);
}

std::vector<std::string> changed_settings(const Config& before, const Config& now,
                                          const std::vector<std::string>& ignore) {
  const auto ignored = [&](const std::string& key) {
    return std::any_of(ignore.begin(), ignore.end(),
                       [&](const std::string& i) { return key == i || key.rfind(i + ".", 0) == 0; });
  };
  std::vector<std::string> changed;
  for (const KeySpec& spec : now.schema().keys()) {
    if (ignored(spec.key) || before.get(spec.key) == now.get(spec.key)) continue;
    changed.push_back(spec.key + " " + to_toml_literal(before.get(spec.key)) + " -> " +
                      to_toml_literal(now.get(spec.key)) + " (" + now.source(spec.key) + ")");
  }
  return changed;
}

}  // namespace tandem
