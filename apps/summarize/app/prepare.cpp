#include "app/prepare.h"

#include <cstdlib>
#include <filesystem>

#include "data/load.h"
#include "keys.h"
#include "model/gpt2_hf.h"
#include "tandem/config/checkpoint_config.h"
#include "tandem/config/config.h"
#include "tandem/config/settings.h"
#include "tandem/dist/world.h"
#include "tandem/error.h"
#include "tandem/obs/log.h"

namespace fs = std::filesystem;

namespace summarize {
namespace {

std::string cache_dir(const PrepareKeys& k) {
  const std::string& dir = k.cache_dir;
  if (!dir.empty()) return dir;
  if (const char* xdg = std::getenv("XDG_CACHE_HOME")) return std::string(xdg) + "/tandem/summarize";
  if (const char* home = std::getenv("HOME")) return std::string(home) + "/.cache/tandem/summarize";
  return ".cache/tandem/summarize";
}

TokenSet cached_tokens(tandem::World& world, const std::string& dir, const std::string& what,
                       const std::vector<Example>& examples, const Gpt2Tokenizer& tok, const PromptTemplate& format,
                       int64_t max_tokens) {
  const auto key = cache_key(examples, "gpt2-bpe-" + std::to_string(tok.vocab_size()), format, max_tokens, true);
  const std::string path = dir + "/tokens-" + key + ".h5";
  if (world.rank() == 0 && !fs::exists(path)) {
    TokenizeStats stats;
    auto set = tokenize(
        examples, [&tok](std::string_view s) { return tok.encode(s); }, format, max_tokens, true, tok.eot(), &stats);
    if (set.size() == 0)
      throw tandem::UsageError("no " + what + " example fits in " + std::to_string(max_tokens) +
                               " tokens (data.max_tokens / model.block_size)");
    if (stats.truncated || stats.dropped)
      tandem::log::warn(what, ": ", stats.truncated, " dialogues truncated and ", stats.dropped,
                        " examples dropped (summary longer than ", max_tokens, " tokens)");
    fs::create_directories(dir);
    save_tokens(path, set);
  }
  world.setup_barrier("rank 0 to tokenize the " + what + " examples (or find them in " + path + ")");
  return load_tokens(path);
}

GPTConfig model_shape(const ModelKeys& k) {
  GPTConfig g = k.init_from.rfind("hf:", 0) == 0 ? read_hf_config(k.init_from.substr(3)) : GPTConfig::preset(k.preset);
  if (k.n_layer > 0) g.n_layer = k.n_layer;
  if (k.n_head > 0) g.n_head = k.n_head;
  if (k.n_embd > 0) g.n_embd = k.n_embd;
  if (k.block_size > 0) g.block_size = k.block_size;
  g.dropout = k.dropout;
  g.bias = k.bias;
  g.validate();
  return g;
}

// The model of these keys; LoRA's validated against its shape.
ModelOptions spec_of(const ModelKeys& model, const LoraKeys& lora) {
  ModelOptions spec;
  spec.shape = model_shape(model);
  spec.init_from = model.init_from;
  spec.lora = lora;
  spec.lora.validate(spec.shape);
  if (spec.lora.enabled() && spec.init_from.rfind("hf:", 0) != 0)
    throw tandem::UsageError("model.lora.targets adapts a pretrained GPT-2, and model.init_from is \"" +
                             spec.init_from + "\": set it to \"hf:DIR\", the Hugging Face folder of the base");
  return spec;
}

}  // namespace

Gpt2Tokenizer load_tokenizer(const tandem::Config& config) {
  std::string dir = tandem::read_keys<PrepareKeys>(config).tokenizer_dir;
  if (dir.empty()) dir = default_tokenizer_dir();
  if (!fs::is_directory(dir))
    throw tandem::UsageError("tokenizer.dir '" + dir + "' does not exist: run env/tokenizer.sh " +
                             "(env/setup.sh does) or point tokenizer.dir at a folder with gpt2.tiktoken, "
                             "encoder.json + vocab.bpe, or vocab.json + merges.txt");
  return Gpt2Tokenizer::load(dir);
}

ModelOptions model_options(const tandem::Config& config) {
  // LoRA's keys are checked only when it is on: unused, they stop nothing.
  const bool lora = tandem::read_fields<LoraKeys>(config).enabled();
  return spec_of(tandem::read_keys<ModelKeys>(config),
                 lora ? tandem::read_keys<LoraKeys>(config) : tandem::read_fields<LoraKeys>(config));
}

void record_shape(tandem::Config& config, const GPTConfig& shape) {
  const std::string why = "the model's shape";
  config.set("model.n_layer", shape.n_layer, why);
  config.set("model.n_head", shape.n_head, why);
  config.set("model.n_embd", shape.n_embd, why);
  config.set("model.block_size", shape.block_size, why);
}

ModelOptions trained_spec(const tandem::Config& config, const std::string& path) {
  if (!fs::is_regular_file(path)) throw tandem::UsageError("checkpoint '" + path + "' not found (set --checkpoint)");
  if (!tandem::has_config(path)) return model_options(config);
  // The file's keys as stored: the build that wrote it accepted them.
  const tandem::Config trained = tandem::config_from_checkpoint(summarize_schema(), path);
  ModelKeys stored = tandem::read_fields<ModelKeys>(trained);
  const LoraKeys lora = tandem::read_fields<LoraKeys>(trained);
  // Files written before record_shape name only the preset or the folder.
  const bool recorded = stored.n_layer > 0 && stored.n_head > 0 && stored.n_embd > 0 && stored.block_size > 0;
  if (recorded && !lora.enabled()) stored.init_from = "scratch";
  // Adapters need their base: where this command says it now lies, or where
  // it lay in training. Either way its checksum must be the one recorded.
  if (lora.enabled() && config.source("model.init_from") != "default")
    stored.init_from = tandem::read_keys<ModelKeys>(config).init_from;
  return spec_of(stored, lora);
}

Prepared prepare_data(tandem::World& world, const tandem::Config& config, const Gpt2Tokenizer& tok,
                      const GPTConfig& model, uint64_t seed) {
  Prepared p;
  const PrepareKeys k = tandem::read_keys<PrepareKeys>(config);
  p.corpus = load_corpus(config, seed);
  p.format = PromptTemplate::parse(k.prompt_template);
  p.max_tokens = k.max_tokens > 0 ? k.max_tokens : model.block_size;
  if (p.max_tokens > model.block_size)
    throw tandem::UsageError("data.max_tokens " + std::to_string(p.max_tokens) + " exceeds the model's block size " +
                             std::to_string(model.block_size));
  const auto dir = cache_dir(k);
  p.train = cached_tokens(world, dir, "train", p.corpus.train, tok, p.format, p.max_tokens);
  p.val = cached_tokens(world, dir, "validation", p.corpus.val, tok, p.format, p.max_tokens);
  tandem::log::info("data: ", p.corpus.origin, ": ", p.train.size(), " training and ", p.val.size(),
                    " validation sequences (", p.train.ids.size(), " training tokens), ", p.corpus.test.size(),
                    " test rows");
  return p;
}

}  // namespace summarize
