#pragma once
// An image as every stage feeds it to the VAE or the classifier: RGB,
// resized to size x size, scaled from [0, 1] to [-1, 1] (the range the VAE's
// decoder produces and the LDM autoencoders are trained on).
#include <ATen/core/Tensor.h>

#include <cstdint>
#include <string>

namespace vavae {

// [3, size, size] float32 in [-1, 1]. An unreadable file throws
// tandem::UsageError naming it: the data set is the user's.
at::Tensor load_image(const std::string& path, int64_t size);

// [-1, 1] back to [0, 1] for writing, clamped.
at::Tensor to_unit_range(const at::Tensor& image);

}  // namespace vavae
