// summarize plan: the memory plan of the job's training on its GPUs, before
// it runs (tandem/train/plan_command.h). Rows are planned at their longest:
// data.max_tokens (or the block size) with gen.max_new_tokens summary
// tokens, unless plan.data reads the corpus and plans its longest row.
#include <algorithm>

#include "app/commands.h"
#include "app/inference.h"
#include "app/prepare.h"
#include "app/summarize_task.h"
#include "model/gpt2_hf.h"
#include "model/lora.h"
#include "tandem/config/config.h"
#include "tandem/dist/seed.h"
#include "tandem/dist/world.h"
#include "tandem/train/plan_command.h"
#include "tandem/train/train_keys.h"

namespace summarize {
namespace {

// The longest row the settings allow, its summary as long as a generated one.
RowBounds longest_allowed(const tandem::Config& config, const GPTConfig& shape, std::string& words) {
  const PrepareKeys prepare = tandem::read_keys<PrepareKeys>(config);
  RowBounds rows;
  rows.length = prepare.max_tokens > 0 ? std::min(prepare.max_tokens, shape.block_size) : shape.block_size;
  rows.predicted = std::min(tandem::read_keys<GenKeys>(config).max_new_tokens + 1, rows.length);
  rows.share = static_cast<double>(rows.predicted) / static_cast<double>(rows.length);
  words = "rows of " + std::to_string(rows.length) + " tokens (" +
          (prepare.max_tokens > 0 ? "data.max_tokens" : "model.block_size") + "), " + std::to_string(rows.predicted) +
          " of them summary (gen.max_new_tokens and the end token); --data plans the data's longest";
  return rows;
}

}  // namespace

int run_plan(tandem::World& world, const tandem::Config& config) {
  const ModelOptions spec = model_options(config);
  tandem::PlanStage stage;
  stage.name = "GPT-2 " + std::to_string(spec.shape.n_layer) + " layers x " + std::to_string(spec.shape.n_embd);
  stage.settings = tandem::train_settings(config);
  RowBounds rows;
  if (tandem::read_keys<tandem::PlanKeys>(config).data) {
    const Gpt2Tokenizer tok = load_tokenizer(config);
    const Prepared data = prepare_data(world, config, tok, spec.shape, tandem::shared_seed(world, stage.settings.seed));
    rows = row_bounds(data.train);
    stage.inputs = "the training data's longest row, " + std::to_string(rows.length) +
                   " tokens, and longest summary, " + std::to_string(rows.predicted) + " tokens";
  } else {
    rows = longest_allowed(config, spec.shape, stage.inputs);
  }
  // The model's shapes without its weights: a Hugging Face base is read
  // for its config.json alone, which sizes the model as load_hf does.
  const bool hf = spec.init_from.rfind("hf:", 0) == 0;
  GPT model(hf ? read_hf_config(spec.init_from.substr(3)) : spec.shape, /*initialise=*/false);
  if (spec.lora.enabled()) add_lora(model, spec.lora);
  stage.model = model.ptr();
  stage.frozen_base = spec.lora.enabled();
  const int64_t pack_tokens = tandem::read_keys<BatchingKeys>(config).batching == "packed" ? spec.shape.block_size : 0;
  stage.packed = pack_tokens > 0;
  GenerationBounds generation;
  if (tandem::read_keys<ScoreKeys>(config).rouge_samples > 0) {
    const GenKeys gen = tandem::read_keys<GenKeys>(config);
    generation = {gen.batch, gen.max_new_tokens};
  }
  stage.activations = [spec, rows, pack_tokens, generation](const tandem::ActivationQuery& q) {
    return summarize_activations(spec, rows, pack_tokens, generation, q);
  };
  return tandem::run_plan(world, config, {stage});
}

}  // namespace summarize
