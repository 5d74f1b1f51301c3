#pragma once
// The vision foundation model's features that VA-VAE aligns its latents with,
// computed once outside tandem (e.g. DINOv2 in Python; docs/vavae.md) and given as
// one HDF5 file: a dataset per training image, named by the image's path
// under data.root ("train/user1/img_001.png", as h5py writes
// f["train/user1/img_001.png"] = features), each [C, h, w] on the latent
// grid. Upstream runs the foundation model inside every step; a file keeps
// a 300M-parameter ViT out of the C++ training job and costs one pass.
#include <ATen/core/Tensor.h>

#include <cstdint>
#include <string>
#include <vector>

#include "data/user_folders.h"

namespace vavae {

// [N, C, h, w], row i for items[i], in the file's dtype (fp16 halves the
// memory it takes). Checked at the door: throws UsageError naming `key`, the
// file and the image when the file is missing or not HDF5, an image has no
// dataset, or a dataset is not [C, h, w] with the C of the first and
// h = w = latent_size.
at::Tensor read_vf_features(const std::string& path, const std::string& key, const std::vector<ImageItem>& items,
                            const std::string& root, int64_t latent_size);

}  // namespace vavae
