#pragma once
// Saving images as 8-bit PNG: vavae's generated samples and grids, and any
// picture a run wants a person to look at.
#include <ATen/core/Tensor.h>

#include <string>

namespace tandem::image {

// [C, H, W] with C 1 (gray) or 3 (RGB), floating in [0, 1] (clamped, then
// rounded to 8 bits as torchvision's save_image rounds) or uint8 -> PNG at
// `path`. The file is replaced atomically, so a reader never sees half an
// image. Throws std::invalid_argument for other shapes or dtypes, and
// std::runtime_error naming the path when it cannot be written.
void write_png(const std::string& path, const at::Tensor& image);

}  // namespace tandem::image
