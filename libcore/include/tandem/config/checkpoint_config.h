#pragma once
// The settings a model was trained with. The Trainer stores the resolved job
// TOML in every checkpoint it writes, so a model file alone says how to
// rebuild the model it holds (depth, classes, preset): a later predict or
// sample run must not depend on its own job file agreeing with training's.
#include <string>
#include <vector>

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

// The settings of `now` that differ from `before` (what a checkpoint was
// written with), one line each: "train.lr 0.0003 -> 0.001 (--set)". A run
// resumed with other settings is legitimate (more epochs, a lower rate), but
// the log must say so, or its curves mislead whoever reads them later. Keys in
// `ignore`, or in a table it names ("cmd"), are passed over.
std::vector<std::string> changed_settings(const Config& before, const Config& now,
                                          const std::vector<std::string>& ignore);

}  // namespace tandem
