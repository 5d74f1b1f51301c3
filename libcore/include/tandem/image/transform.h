#pragma once
// Geometry and colour on decoded images ([C, H, W] float in [0, 1]): the
// deterministic resize every evaluation uses, the random training view that
// carotid's augmentation draws, and the grid vavae tiles its samples into.
#include <ATen/core/Tensor.h>

#include <cstdint>
#include <vector>

namespace tandem::image {

// [C, H, W] floating -> [C, height, width], bilinear with align_corners=false;
// antialiased along the axes that shrink (as torchvision's resize with
// antialias=True), so a 500-pixel scan brought to 28 pixels averages its
// pixels instead of picking a sparse subset of them. Throws
// std::invalid_argument for other shapes, integer tensors or sizes below 1.
at::Tensor resize(const at::Tensor& image, int64_t height, int64_t width);

struct AugmentOptions {
  bool enabled = true;
  double crop_scale_min = 0.8, crop_scale_max = 1.0;          // random resized crop: area fraction
  double crop_ratio_min = 3.0 / 4, crop_ratio_max = 4.0 / 3;  // aspect ratio range (log-uniform, as torchvision)
  double hflip = 0.5;                                         // probability of a horizontal flip
  double rotate_degrees = 10;                                 // uniform in [-d, d]
  double brightness = 0.1;                                    // factor uniform in [1-b, 1+b]
  double contrast = 0.1;  // factor uniform in [1-c, 1+c] around the image's mean luma (as torchvision)
};

// One random training view of `image` as [C, size, size] in [0, 1]: a crop
// chosen as torchvision's RandomResizedCrop chooses it, a horizontal flip and a
// rotation, sampled in one bilinear grid_sample with border padding, then
// brightness and contrast. The parameters come from a private generator seeded
// with `seed` alone, never LibTorch's global one: loader threads call this while
// the model trains, and a sample's view must not depend on what else ran.
// enabled=false gives resize(image, size, size). Throws std::invalid_argument
// for a bad image (as resize), size below 1, or options out of range.
at::Tensor augment(const at::Tensor& image, int64_t size, const AugmentOptions& options, uint64_t seed);

// Images of one shape [C, H, W] tiled row by row into `columns` columns (fewer
// when there are fewer images), with `padding` pixels of `pad_value` between
// and around them, as torchvision's make_grid -> [C, H', W'] of the images'
// dtype. Throws std::invalid_argument for no images, mixed shapes, columns
// below 1 or negative padding.
at::Tensor image_grid(const std::vector<at::Tensor>& images, int64_t columns, int64_t padding = 2,
                      double pad_value = 1.0);

}  // namespace tandem::image
