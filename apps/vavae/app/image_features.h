#pragma once
// FID's Inception-v3 features (metrics/fid_inception.h) of image files, as
// evaluate needs them: computed in evaluation mode in fp32, each rank taking
// an equal share (tandem::gather_eval_rows, with
// its prefetch and its halving on running out of memory), gathered in order
// on every rank. The real images' features are kept in the run folder, so
// that later evaluations of the same real images only compute the
// generated ones'.
#include <ATen/core/Tensor.h>

#include <cstdint>
#include <string>
#include <vector>

#include "data/user_folders.h"
#include "metrics/fid_inception.h"
#include "tandem/train/evaluate.h"

namespace vavae {

struct ImageFeatures {
  at::Tensor features;  // [N, 2048] float32, on the CPU, in the items' order
  at::Tensor users;     // [N] int64, the items' 1-based user ids
};

// Images a forward pass: Inception's activations at 299 pixels are large.
inline constexpr int64_t kFeatureBatch = 32;

// Each image read as the judge reads it (RGB, resized to `size`), in [0, 1],
// in fp32 whatever ctx.precision (pytorch-fid's features, and the same for
// every caller of one cache), kFeatureBatch a pass. A collective: every
// rank calls it with the same items.
ImageFeatures image_features(FidInception& net, const std::vector<ImageItem>& items, int64_t size,
                             const tandem::EvalContext& ctx);

// image_features, kept in `cache` (a safetensors file) under a fingerprint of
// what determines them: every image file's bytes (CRC-64) and user, `size`,
// and the weights file's bytes. A cache with another fingerprint, or one that
// cannot be read, is computed again and replaced (logged); the images'
// folder may be read-only (Kaggle's inputs). Rank 0 decides; a collective.
ImageFeatures cached_image_features(FidInception& net, const std::vector<ImageItem>& items, int64_t size,
                                    const tandem::EvalContext& ctx, const std::string& cache,
                                    const std::string& weights_path);

}  // namespace vavae
