#include "app/vae_source.h"

#include <torch/torch.h>

#include <algorithm>
#include <filesystem>

#include "app/pipeline.h"
#include "keys.h"
#include "model/vae.h"
#include "tandem/config/checkpoint_config.h"
#include "tandem/error.h"
#include "tandem/io/checkpoint.h"
#include "tandem/nn/init_from.h"
#include "tandem/random.h"
#include "tandem/train/trainer.h"

namespace vavae {
namespace fs = std::filesystem;
using tandem::UsageError;

namespace {

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace

std::string init_from_file(const tandem::Config& config) {
  const std::string value = tandem::read_keys<VaeKeys>(config).init_from;
  if (value.empty()) return "";
  const std::string prefix = "safetensors:";
  if (value.rfind(prefix, 0) != 0) throw UsageError("vae.init_from: '" + value + "': expected \"safetensors:FILE\"");
  const std::string file = value.substr(prefix.size());
  if (!fs::is_regular_file(file)) throw UsageError("vae.init_from: " + file + ": no such file");
  return file;
}

std::string resolve_vae_path(const tandem::Config& config) {
  const std::string given = tandem::read_keys<VaeKeys>(config).checkpoint;
  if (!given.empty()) {
    if (!fs::is_regular_file(given)) throw UsageError("vae.checkpoint: " + given + ": no such file");
    return given;
  }
  const std::string trained = tandem::trained_model(vae_run_dir(config));
  if (!trained.empty()) return trained;
  const std::string init = init_from_file(config);
  if (!init.empty()) return init;
  throw UsageError("no VAE: " + vae_run_dir(config) +
                   "/models holds no model (run train-vae first), and neither "
                   "vae.checkpoint nor vae.init_from is set");
}

LoadedVae load_vae(const std::string& path, const std::string& preset) {
  LoadedVae out;
  out.path = path;
  out.preset = preset;
  if (ends_with(path, ".safetensors")) {
    out.vae = Vae(VaeOptions::preset(preset));
    tandem::nn::InitOptions options;
    options.allow_unexpected = true;
    tandem::nn::init_from_safetensors(*out.vae, path, options);
  } else {
    tandem::Checkpoint ckpt = tandem::load_checkpoint(path);
    if (tandem::has_config(ckpt))
      out.preset = tandem::read_fields<VaeKeys>(tandem::config_from_checkpoint(vavae_schema(), ckpt)).preset;
    out.vae = Vae(VaeOptions::preset(out.preset));
    // A VA-VAE trained with VF features carries its training-only projection.
    if (auto model = ckpt.sets.find("model"); model != ckpt.sets.end()) {
      auto& set = model->second;
      set.erase(std::remove_if(set.begin(), set.end(),
                               [](const auto& named) { return named.first.rfind(kVfProjectionPrefix, 0) == 0; }),
                set.end());
    }
    tandem::restore(ckpt, "model", tandem::named_tensors(out.vae->named_parameters()));
  }
  out.vae->eval();
  out.hash = weights_hash(*out.vae);
  return out;
}

LoadedVae latents_vae(const tandem::Config& config, const LatentSet& latents, const std::string& latent_path) {
  const std::string given = tandem::read_keys<VaeKeys>(config).checkpoint;
  const std::string path = given.empty() ? latents.vae_path : given;
  if (!fs::is_regular_file(path))
    throw UsageError("the VAE " + path + " that made " + latent_path + " is gone (set vae.checkpoint)");
  LoadedVae vae = load_vae(path, latents.vae_preset);
  if (vae.hash != latents.vae_hash)
    throw UsageError("the VAE " + path + " (weights " + vae.hash + ") is not the one the latents of " + latent_path +
                     " came from (" + latents.vae_path + ", weights " + latents.vae_hash +
                     "): decode with that one, or run extract and train-dit again");
  return vae;
}

std::string weights_hash(torch::nn::Module& module) {
  tandem::Fnv1a64 fnv;
  for (const auto& p : module.named_parameters()) {
    fnv.add(p.key().data(), p.key().size());
    const auto sizes = p.value().sizes();
    fnv.add(sizes.data(), sizes.size() * sizeof(int64_t));
    const at::Tensor values = p.value().detach().to(torch::kCPU, torch::kFloat).contiguous();
    fnv.add(values.data_ptr<float>(), values.numel() * sizeof(float));
  }
  return fnv.hex();
}

}  // namespace vavae
