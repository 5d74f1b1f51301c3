#pragma once
// Which VAE a stage encodes or decodes with, and its identity. The latents
// and the VAE that decodes them must belong together: a DiT trained on one
// VAE's latents gives noise through another's decoder. So the latent files
// record the VAE's path and a hash of its weights, and sample checks them.
#include <string>

#include "model/vae.h"
#include "tandem/config/config.h"

namespace vavae {

// The file of vae.init_from ("safetensors:FILE"), "" when unset. Throws
// UsageError for another form or a missing file.
std::string init_from_file(const tandem::Config& c);

// vae.checkpoint, else OUT/vae's best or final model, else vae.init_from's
// file. Throws UsageError naming the keys when there is none, or when the
// file given does not exist.
std::string resolve_vae_path(const tandem::Config& c);

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

// FNV-1a (64 bit, hex) over every parameter's name, shape and float32 bytes.
std::string weights_hash(torch::nn::Module& module);

}  // namespace vavae
