#pragma once
// The latent files extract writes and train-dit and sample read:
// OUT/latent_features/{train,val}.h5 with datasets `latents` [N, C, h, w]
// float32 and `user_ids` [N] int64 (1-based), attributes num_users,
// num_samples, image_size and the VAE's identity (vae_path, vae_hash,
// vae_preset); train.h5 also holds `mean` and `std` [C], the per-channel
// statistics over the training latents that the DiT's inputs are
// normalised with (upstream kept them in a pickle beside the files).
#include <ATen/core/Tensor.h>

#include <cstdint>
#include <string>

namespace vavae {

struct LatentSet {
  at::Tensor latents;   // [N, C, h, w] float32
  at::Tensor user_ids;  // [N] int64, 1-based
  int64_t num_users = 0;
  int64_t image_size = 0;
  std::string vae_path, vae_hash, vae_preset;
  at::Tensor mean, std;  // [C]; undefined where not stored
};

// Written to a temporary name and renamed, so a preempted extract never
// leaves a file that looks complete.
void write_latents(const std::string& path, const LatentSet& set);

// Throws UsageError naming the file when it is missing ("run extract
// first") or lacks a dataset or attribute.
LatentSet read_latents(const std::string& path);

// Per-channel mean and std over [N, C, h, w] (dims 0, 2, 3).
std::pair<at::Tensor, at::Tensor> channel_stats(const at::Tensor& latents);

}  // namespace vavae
