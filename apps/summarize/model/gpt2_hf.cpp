#include "model/gpt2_hf.h"

#include <torch/torch.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <type_traits>
#include <vector>

#include "tandem/error.h"
#include "tandem/io/atomic_file.h"
#include "tandem/io/checkpoint.h"
#include "tandem/io/safetensors.h"
#include "tandem/text/message_text.h"

namespace summarize {
namespace {

namespace fs = std::filesystem;
using tandem::UsageError;

const std::string kPrefix = "transformer.";

bool starts_with(const std::string& text, const std::string& start) { return text.rfind(start, 0) == 0; }

bool ends_with(const std::string& text, const std::string& end) {
  return text.size() >= end.size() && text.compare(text.size() - end.size(), end.size(), end) == 0;
}

// HF's name for one of our parameters, or for one of its own file's tensors:
// both drop the prefix.
std::string hf_name(const std::string& name) { return starts_with(name, kPrefix) ? name.substr(kPrefix.size()) : name; }

// The weights HF's GPT-2 keeps as Conv1D, [in, out].
bool conv1d(const std::string& name) {
  for (const char* suffix : {".attn.c_attn.weight", ".attn.c_proj.weight", ".mlp.c_fc.weight", ".mlp.c_proj.weight"})
    if (ends_with(name, suffix)) return true;
  return false;
}

// Tensors HF files may hold that the model rebuilds itself.
bool skipped(const std::string& name) {
  return ends_with(name, ".attn.bias") || ends_with(name, ".attn.masked_bias") || name == "lm_head.weight";
}

std::string shape_text(at::IntArrayRef sizes) {
  std::string out = "[";
  for (const int64_t size : sizes) out += (out.size() > 1 ? "," : "") + std::to_string(size);
  return out + "]";
}

nlohmann::json read_json(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw UsageError(path + ": cannot open: " + std::strerror(errno));
  try {
    return nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& error) {  // also out_of_range: a number past double
    throw UsageError(path + ": bad JSON: " + error.what());
  }
}

template <class T>
T value_of(const nlohmann::json& json, const std::string& key, const std::string& path) {
  if (!json.contains(key)) throw UsageError(path + ": no \"" + key + "\"");
  const nlohmann::json& value = json.at(key);
  // get<int64_t>() would truncate 12.7, and casting 8.7e32 to an integer is
  // undefined (found by fuzz_hf_config): a whole number must be written as one.
  const bool fits = std::is_integral_v<T> ? value.is_number_integer() : value.is_number();
  if (!fits)
    throw UsageError(path + ": \"" + key + "\" is " + value.dump() + ", not a " +
                     (std::is_integral_v<T> ? "whole number" : "number"));
  return value.get<T>();
}

// Where `key` is present and not null, it must equal `expected`.
void require(const nlohmann::json& json, const std::string& key, const nlohmann::json& expected,
             const std::string& path, const std::string& why) {
  if (json.contains(key) && !json[key].is_null() && json[key] != expected) {
    throw UsageError(path + ": \"" + key + "\" is " + json[key].dump() + "; this GPT-2 supports only " +
                     expected.dump() + " (" + why + ")");
  }
}

}  // namespace

GPTConfig read_hf_config(const std::string& dir) {
  const std::string path = (fs::path(dir) / "config.json").string();
  const nlohmann::json json = read_json(path);
  if (!json.is_object()) throw UsageError(path + ": expected a JSON object");
  require(json, "model_type", "gpt2", path, "a GPT-2 config");
  require(json, "activation_function", "gelu_new", path, "GELU, tanh approximation");
  require(json, "tie_word_embeddings", true, path, "the output head is the token embedding");
  require(json, "scale_attn_weights", true, path, "attention scaled by 1/sqrt(head size)");
  require(json, "scale_attn_by_inverse_layer_idx", false, path, "attention scaled by 1/sqrt(head size)");

  GPTConfig config;
  config.n_layer = value_of<int64_t>(json, "n_layer", path);
  config.n_head = value_of<int64_t>(json, "n_head", path);
  config.n_embd = value_of<int64_t>(json, "n_embd", path);
  config.vocab_size = value_of<int64_t>(json, "vocab_size", path);
  config.block_size = value_of<int64_t>(json, json.contains("n_positions") ? "n_positions" : "n_ctx", path);
  if (json.contains("layer_norm_epsilon"))
    config.layer_norm_epsilon = value_of<double>(json, "layer_norm_epsilon", path);
  require(json, "n_inner", 4 * config.n_embd, path, "an MLP 4 times as wide as n_embd");
  try {
    config.validate();
  } catch (const UsageError& error) {
    throw UsageError(path + ": " + error.what());
  }
  return config;
}

void load_hf_weights(GPT& model, const std::string& dir) {
  const std::string path = (fs::path(dir) / "model.safetensors").string();
  if (!fs::exists(path)) throw UsageError(dir + ": no model.safetensors (only safetensors weights are read)");

  // The file's shapes against the model's first; the data after, a tensor at
  // a time (for_each_safetensor), so that a large model's file is never held
  // whole beside the model.
  std::map<std::string, std::vector<int64_t>> found;  // HF name -> shape in the file
  for (const auto& entry : tandem::read_safetensors_index(path))
    if (!skipped(hf_name(entry.name))) found[hf_name(entry.name)] = entry.shape;

  std::map<std::string, at::Tensor> targets;  // HF name -> parameter
  std::vector<std::string> missing, reshaped, unexpected;
  for (const auto& item : model->named_parameters()) {
    const std::string name = hf_name(item.key());
    const at::Tensor& param = item.value();
    const auto it = found.find(name);
    if (it == found.end()) {
      missing.push_back(name);
      continue;
    }
    std::vector<int64_t> ours = it->second;
    if (conv1d(name) && ours.size() == 2) std::swap(ours[0], ours[1]);
    if (at::IntArrayRef(ours) != param.sizes()) {
      const at::Tensor expected = conv1d(name) ? param.t() : param;
      reshaped.push_back(name + " " + shape_text(it->second) + " in the file, " + shape_text(expected.sizes()) +
                         " for this model");
    } else {
      targets.emplace(name, param);
    }
    found.erase(it);
  }
  for (const auto& entry : found) unexpected.push_back(entry.first);

  if (!missing.empty() || !reshaped.empty() || !unexpected.empty()) {
    const GPTConfig& c = model->config();
    std::ostringstream message;
    message << path << ": does not fit a GPT-2 with n_layer=" << c.n_layer << " n_head=" << c.n_head
            << " n_embd=" << c.n_embd << " vocab_size=" << c.vocab_size << " block_size=" << c.block_size
            << (c.bias ? "" : " without bias") << ":";
    if (!missing.empty()) message << " missing " << tandem::first_few(missing, 6) << ";";
    if (!unexpected.empty()) message << " unexpected " << tandem::first_few(unexpected, 6) << ";";
    if (!reshaped.empty()) message << " reshaped " << tandem::first_few(reshaped, 6) << ";";
    throw UsageError(message.str());
  }
  torch::NoGradGuard no_grad;
  tandem::for_each_safetensor(path, [&](const std::string& file_name, const at::Tensor& tensor) {
    const std::string name = hf_name(file_name);
    const auto it = targets.find(name);
    if (it != targets.end()) it->second.copy_(conv1d(name) && tensor.dim() == 2 ? tensor.t() : tensor);
  });
}

GPT load_hf(const std::string& dir) {
  GPT model(read_hf_config(dir));
  load_hf_weights(model, dir);
  return model;
}

void export_hf(const GPT& model, const std::string& dir) {
  const GPTConfig& c = model->config();
  fs::create_directories(dir);

  tandem::NamedTensors tensors;
  for (const auto& item : model->named_parameters()) {
    const at::Tensor weight = item.value().detach().to(torch::kCPU, torch::kFloat);
    tensors.emplace_back(item.key(), conv1d(item.key()) ? weight.t() : weight);
  }
  if (!c.bias) {
    const auto zeros = [&](const std::string& name, int64_t size) {
      tensors.emplace_back(kPrefix + name, torch::zeros({size}));
    };
    for (int64_t layer = 0; layer < c.n_layer; ++layer) {
      const std::string block = "h." + std::to_string(layer) + ".";
      zeros(block + "ln_1.bias", c.n_embd);
      zeros(block + "attn.c_attn.bias", 3 * c.n_embd);
      zeros(block + "attn.c_proj.bias", c.n_embd);
      zeros(block + "ln_2.bias", c.n_embd);
      zeros(block + "mlp.c_fc.bias", 4 * c.n_embd);
      zeros(block + "mlp.c_proj.bias", c.n_embd);
    }
    zeros("ln_f.bias", c.n_embd);
  }
  tandem::write_safetensors((fs::path(dir) / "model.safetensors").string(), tensors, {{"format", "pt"}});

  // GPT2Config's fields as save_pretrained writes them.
  nlohmann::ordered_json json;
  json["activation_function"] = "gelu_new";
  json["architectures"] = nlohmann::ordered_json::array({"GPT2LMHeadModel"});
  json["attn_pdrop"] = c.dropout;
  json["bos_token_id"] = 50256;
  json["embd_pdrop"] = c.dropout;
  json["eos_token_id"] = 50256;
  json["initializer_range"] = 0.02;
  json["layer_norm_epsilon"] = c.layer_norm_epsilon;
  json["model_type"] = "gpt2";
  json["n_ctx"] = c.block_size;
  json["n_embd"] = c.n_embd;
  json["n_head"] = c.n_head;
  json["n_inner"] = nullptr;
  json["n_layer"] = c.n_layer;
  json["n_positions"] = c.block_size;
  json["reorder_and_upcast_attn"] = false;
  json["resid_pdrop"] = c.dropout;
  json["scale_attn_by_inverse_layer_idx"] = false;
  json["scale_attn_weights"] = true;
  json["summary_activation"] = nullptr;
  json["summary_first_dropout"] = 0.1;
  json["summary_proj_to_labels"] = true;
  json["summary_type"] = "cls_index";
  json["summary_use_proj"] = true;
  json["tie_word_embeddings"] = true;
  json["torch_dtype"] = "float32";
  json["use_cache"] = true;
  json["vocab_size"] = c.vocab_size;
  tandem::write_bytes_atomically((fs::path(dir) / "config.json").string(), json.dump(2) + "\n");
}

void export_peft_adapter(const GPT& model, const LoraKeys& settings, const std::string& base_dir,
                         const std::string& dir) {
  fs::create_directories(dir);
  tandem::NamedTensors tensors;
  for (const auto& item : model->named_parameters())
    if (item.key().find(".lora_") != std::string::npos)
      tensors.emplace_back("base_model.model." + item.key(), item.value().detach().to(torch::kCPU, torch::kFloat));
  tandem::write_safetensors((fs::path(dir) / "adapter_model.safetensors").string(), tensors, {{"format", "pt"}});

  nlohmann::ordered_json json;
  json["peft_type"] = "LORA";
  json["task_type"] = "CAUSAL_LM";
  json["base_model_name_or_path"] = fs::absolute(base_dir).string();
  json["r"] = settings.rank;
  json["lora_alpha"] = settings.alpha;
  json["lora_dropout"] = settings.dropout;
  json["target_modules"] = settings.targets;
  json["fan_in_fan_out"] = true;
  json["bias"] = "none";
  json["init_lora_weights"] = true;
  json["use_rslora"] = false;
  json["use_dora"] = false;
  json["modules_to_save"] = nullptr;
  json["inference_mode"] = true;
  tandem::write_bytes_atomically((fs::path(dir) / "adapter_config.json").string(), json.dump(2) + "\n");
}

}  // namespace summarize
