#pragma once
// Which VAE a stage encodes or decodes with, and its identity. The latents
// and the VAE that decodes them must belong together: a DiT trained on one
// VAE's latents gives noise through another's decoder. So the latent files
// record the VAE's path and a hash of its weights, and sample checks them.
#include <string>

#include "app/latent_file.h"
#include "model/vae.h"
#include "tandem/config/config.h"
#include "tandem/config/settings.h"

namespace vavae {

// The vae.* keys of the VAE's shape, start, loss and file, each declared once
// (tandem/config/settings.h); its training keys are under [vae] too
// (tandem::add_model_keys).
struct VaeKeys {
  std::string preset = "f16d32";
  std::string init_from;
  double kl_weight = 1e-6;
  std::string vf_features;
  double vf_weight = 0.1;
  std::string checkpoint;

  template <class Self, class Visit>
  static void each_key(Self& k, Visit&& visit) {
    using tandem::any;
    visit("vae.preset", k.preset, "VAE size: f16d32 (VA-VAE: 256x256 -> 32x16x16) or tiny (CPU: 32x32 -> 4x8x8)",
          tandem::one_of({"f16d32", "tiny"}));
    visit("vae.init_from", k.init_from,
          "\"safetensors:FILE\": start from weights with the upstream names (a converted VA-VAE); empty: random",
          any());
    visit("vae.kl_weight", k.kl_weight, "weight of the KL term against the L1 reconstruction", tandem::at_least(0));
    visit("vae.vf_features", k.vf_features,
          "HDF5 of a vision foundation model's features (e.g. DINOv2) per training image, [C, h, w] on the latent "
          "grid, named by the image's path under data.root: VA-VAE's alignment loss; empty: a plain KL-VAE",
          any());
    visit("vae.vf_weight", k.vf_weight, "weight of the VF loss on top of its adaptive weight (upstream: 0.1)",
          tandem::at_least(0));
    visit("vae.checkpoint", k.checkpoint,
          "the VAE extract and sample use: a models/*.h5 or a .safetensors; empty: OUT/vae/models/best_model.h5, "
          "else final_model.h5, else the file of vae.init_from",
          any());
  }
};

// The file of vae.init_from ("safetensors:FILE"), "" when unset. Throws
// UsageError for another form or a missing file.
std::string init_from_file(const tandem::Config& config);

// vae.checkpoint, else OUT/vae's best or final model, else vae.init_from's
// file. Throws UsageError naming the keys when there is none, or when the
// file given does not exist.
std::string resolve_vae_path(const tandem::Config& config);

struct LoadedVae {
  Vae vae{nullptr};  // on the CPU, in eval mode
  std::string path;
  std::string preset;
  std::string hash;  // of the weights: names, shapes, values
};

// A models/*.h5 written by train-vae (its set "model", preset from the
// config it carries) or a .safetensors with the upstream names (preset
// `preset`; tensors the VAE lacks, upstream's loss.* and foundation
// model's, are ignored). Throws UsageError naming the file.
LoadedVae load_vae(const std::string& path, const std::string& preset);

// The VAE that decodes these latents: vae.checkpoint, else the file the
// latents record. Throws UsageError when that file is gone, or when its
// weights are not those the latents came from (`latent_path` names them).
LoadedVae latents_vae(const tandem::Config& config, const LatentSet& latents, const std::string& latent_path);

// FNV-1a (64 bit, hex) over every parameter's name, shape and float32 bytes.
std::string weights_hash(torch::nn::Module& module);

}  // namespace vavae
