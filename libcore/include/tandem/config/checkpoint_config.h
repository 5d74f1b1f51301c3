#pragma once
// The settings a model was trained with. The Trainer stores the resolved job
// TOML in every checkpoint it writes, so a model file alone says how to
// rebuild the model it holds (depth, classes, preset): a later predict or
// sample run must not depend on its own job file agreeing with training's.
#include <string>

#include "tandem/config/config.h"

namespace tandem {

struct Checkpoint;

// Whether the checkpoint carries a config: weights converted from elsewhere,
// for instance, do not.
bool has_config(const Checkpoint& checkpoint);
// The same for the file at `path`, reading none of its tensors.
bool has_config(const std::string& path);

// The carried config over `schema`'s defaults. Throws UsageError naming the
// file when it carries none, and naming the file, line and key when the
// config does not fit the schema (a model of another program, or of a version
// whose keys have changed since).
Config config_from_checkpoint(const Schema& schema, const Checkpoint& checkpoint);
// The same from the file at `path`, reading its config without its tensors.
// Throws UsageError as load_checkpoint does for a missing or non-HDF5 file.
Config config_from_checkpoint(const Schema& schema, const std::string& path);

}  // namespace tandem
