#pragma once
// What summarize's commands start from: the tokenizer, the model's options
// and the run's seed; the model file a command names; and that model on the
// rank's device, in the precision it runs in there.
#include <cstdint>
#include <string>
#include <vector>

#include "app/prepare.h"
#include "data/example.h"
#include "model/gpt2.h"
#include "tandem/train/precision.h"
#include "tokenizer/gpt2_tokenizer.h"

namespace tandem {
class Config;
class World;
}  // namespace tandem

namespace summarize {

// train.out_dir.
std::string out_dir(const tandem::Config& config);

struct Setup {
  Gpt2Tokenizer tok;
  ModelOptions spec;
  uint64_t seed;  // the run's, the same on every rank (train.seed = -1 draws it once)
};
Setup setup(tandem::World& world, const tandem::Config& config);

// cmd.checkpoint; else the run's model (trained_model); else the final model
// a finished run would have, so that "not found" names the file to expect.
std::string default_checkpoint(const tandem::Config& config);

// A model on the rank's device, and the precision it runs in there.
struct Placed {
  GPT model;
  tandem::Precision precision;
};

// Where every command's model goes, whatever it was read from: the device the
// dist.* keys put this rank on, in the precision inference_setup picks for
// `model_file` ("" for weights from elsewhere), decided and logged once.
Placed on_rank_device(tandem::World& world, const tandem::Config& config, GPT model, const std::string& model_file);

// The model of a checkpoint or models/*.h5 file, on the rank's device: a
// whole model, or adapters on the base they were trained on.
Placed load_model(tandem::World& world, const tandem::Config& config, const ModelOptions& spec,
                  const std::string& path);

// The first n examples; all of them for 0.
std::vector<Example> first_examples(const std::vector<Example>& examples, int64_t n);

}  // namespace summarize
