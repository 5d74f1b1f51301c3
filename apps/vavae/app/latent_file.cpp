#include "app/latent_file.h"

#include <torch/torch.h>

#include <filesystem>

#include "tandem/error.h"
#include "tandem/io/atomic_file.h"
#include "tandem/io/h5file.h"

namespace vavae {

void write_latents(const std::string& path, const LatentSet& set) {
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  tandem::replace_atomically(path, [&](const std::string& temp) {
    tandem::H5File file(temp, tandem::H5File::Mode::kCreate);
    file.write("latents", set.latents.to(at::kFloat).contiguous());
    file.write("user_ids", set.user_ids.to(at::kLong).contiguous());
    if (set.mean.defined()) {
      file.write("mean", set.mean.to(at::kFloat).contiguous());
      file.write("std", set.std.to(at::kFloat).contiguous());
    }
    file.set_attr("", "num_users", set.num_users);
    file.set_attr("", "num_samples", set.latents.size(0));
    file.set_attr("", "image_size", set.image_size);
    file.set_attr("", "vae_path", set.vae_path);
    file.set_attr("", "vae_hash", set.vae_hash);
    file.set_attr("", "vae_preset", set.vae_preset);
    file.close();
  });
}

LatentSet read_latents(const std::string& path) {
  if (!std::filesystem::is_regular_file(path))
    throw tandem::UsageError("latent file " + path + " not found: run `vavae extract` first (same --run-dir)");
  const tandem::H5File file(path);
  LatentSet set;
  set.latents = file.read("latents");
  set.user_ids = file.read("user_ids");
  set.num_users = file.attr_int("", "num_users");
  set.image_size = file.attr_int("", "image_size");
  set.vae_path = file.attr_string("", "vae_path");
  set.vae_hash = file.attr_string("", "vae_hash");
  set.vae_preset = file.attr_string("", "vae_preset");
  if (file.has("mean")) {
    set.mean = file.read("mean");
    set.std = file.read("std");
  }
  if (set.latents.dim() != 4 || set.user_ids.dim() != 1 || set.user_ids.size(0) != set.latents.size(0))
    throw tandem::UsageError(path + ": expected latents [N, C, h, w] and user_ids [N]");
  return set;
}

std::pair<at::Tensor, at::Tensor> channel_stats(const at::Tensor& latents) {
  const at::Tensor x = latents.to(at::kDouble);
  const at::Tensor mean = x.mean({0, 2, 3});
  const at::Tensor var = (x - mean.view({1, -1, 1, 1})).pow(2).mean({0, 2, 3});
  return {mean.to(at::kFloat), var.sqrt().to(at::kFloat)};
}

}  // namespace vavae
