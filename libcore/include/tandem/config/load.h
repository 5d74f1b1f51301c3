#pragma once
// Layering TOML job files and `key=value` overrides onto a Config. Every failure
// is a UsageError that names the file and line, or the override, and the key.
#include <string>
#include <vector>

#include "tandem/config/config.h"

namespace tandem {

// Sets every key the TOML file at `path` gives; a key's source becomes
// "<path>:<line>". Tables nest: `[train]` then `lr = 1e-4` (or `train.lr = 1e-4`
// at the top) is the key train.lr.
void merge_file(Config& config, const std::string& path);
// The same for the TOML text a model file carries (the config it was trained
// with); `name` stands for the file in sources and messages. Keys the schema
// has retired since are passed over (Schema::retire).
void merge_text(Config& config, const std::string& text, const std::string& name);

// Applies one --set override, "train.lr=3e-4". The right-hand side is read as a
// TOML value (3e-4, [1, 2], true, "text"). For a string key, text that is not a
// TOML string is taken literally, so `precision=bf16` needs no quotes. Floats are
// accepted for an int key only when integral (1e5, not 2.5).
void apply_set(Config& config, const std::string& assignment);

// Sets `key` from `text` read as the right-hand side of --set; `source` is the
// flag that gave it ("--batch-size") and starts any error message.
void apply_value(Config& config, const std::string& key, const std::string& text, const std::string& source);

// Defaults, then the file (none if `path` is empty), then each override in order.
Config load_config(const Schema& schema, const std::string& path, const std::vector<std::string>& sets);

}  // namespace tandem
