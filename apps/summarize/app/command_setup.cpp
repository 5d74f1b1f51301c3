#include "app/command_setup.h"

#include <torch/torch.h>

#include <filesystem>

#include "app/commands.h"
#include "tandem/config/config.h"
#include "tandem/dist/seed.h"
#include "tandem/dist/world.h"
#include "app/summarize_task.h"
#include "tandem/io/checkpoint.h"
#include "tandem/train/inference_setup.h"
#include "tandem/train/train_keys.h"
#include "tandem/train/trainer.h"

namespace fs = std::filesystem;

namespace summarize {

std::string out_dir(const tandem::Config& config) { return tandem::run_settings(config).out_dir; }

Setup setup(tandem::World& world, const tandem::Config& config) {
  return {load_tokenizer(config), model_options(config), tandem::shared_seed(world, tandem::run_settings(config).seed)};
}

Placed on_rank_device(tandem::World& world, const tandem::Config& config, GPT model, const std::string& model_file) {
  const tandem::InferenceSetup setup = tandem::inference_setup(world, config, /*fixed_shapes=*/false, model_file);
  model->to(setup.device);
  // For good: no dropout, and the weights' copies for few-row products kept
  // from one batch of prompts to the next (model/weight_copy.h).
  model->eval();
  return {model, setup.precision};
}

Placed load_model(tandem::World& world, const tandem::Config& config, const ModelOptions& spec, const std::string& path) {
  const tandem::Checkpoint file = tandem::load_checkpoint(path);
  const bool adapters = spec.lora.enabled();
  tandem::require_frozen_base(file, adapters ? base_checksum(spec) : "");
  GPT model = adapters ? make_model(spec) : GPT(spec.shape);
  tandem::restore(file, "model", adapters ? tandem::trained_state(*model) : tandem::module_state(*model));
  return on_rank_device(world, config, model, path);
}

std::string default_checkpoint(const tandem::Config& config) {
  const std::string given = tandem::read_keys<CommandKeys>(config).checkpoint;
  if (!given.empty()) return given;
  // Naming the final model when there is none yet makes the "not found"
  // message point at the file a finished run would have.
  const std::string trained = tandem::trained_model(out_dir(config));
  return !trained.empty() ? trained : (fs::path(out_dir(config)) / "models" / "final_model.h5").string();
}

std::vector<Example> first_examples(const std::vector<Example>& examples, int64_t n) {
  if (n == 0 || n >= static_cast<int64_t>(examples.size())) return examples;
  return {examples.begin(), examples.begin() + n};
}

}  // namespace summarize
