#include "tandem/image/transform.h"

#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "tandem/random.h"

namespace tandem::image {
namespace {

namespace F = torch::nn::functional;

constexpr double kPi = 3.14159265358979323846;

void check_image(const at::Tensor& image, const char* who) {
  if (!image.defined() || image.dim() != 3 || !image.is_floating_point() || image.numel() == 0)
    throw std::invalid_argument(std::string(who) + ": expected a non-empty floating [C, H, W] image");
}

struct Crop {
  int64_t top, left, height, width;
};

// torchvision's RandomResizedCrop.get_params: ten tries at an area and a
// log-uniform aspect ratio that fit, else the largest central crop whose ratio
// is in range.
Crop random_crop(int64_t H, int64_t W, const AugmentOptions& o, SplitMix64& rng) {
  const double area = static_cast<double>(H) * W;
  for (int attempt = 0; attempt < 10; ++attempt) {
    const double target = area * rng.uniform(o.crop_scale_min, o.crop_scale_max);
    const double ratio = std::exp(rng.uniform(std::log(o.crop_ratio_min), std::log(o.crop_ratio_max)));
    const auto w = static_cast<int64_t>(std::nearbyint(std::sqrt(target * ratio)));
    const auto h = static_cast<int64_t>(std::nearbyint(std::sqrt(target / ratio)));
    if (0 < w && w <= W && 0 < h && h <= H) {
      const auto top = static_cast<int64_t>(below(rng, static_cast<uint64_t>(H - h + 1)));
      return {top, static_cast<int64_t>(below(rng, static_cast<uint64_t>(W - w + 1))), h, w};
    }
  }
  const double in_ratio = static_cast<double>(W) / H;
  int64_t w = W, h = H;
  if (in_ratio < o.crop_ratio_min) {
    h = std::clamp<int64_t>(std::llround(W / o.crop_ratio_min), 1, H);
  } else if (in_ratio > o.crop_ratio_max) {
    w = std::clamp<int64_t>(std::llround(H * o.crop_ratio_max), 1, W);
  }
  return {(H - h) / 2, (W - w) / 2, h, w};
}

void check_options(const AugmentOptions& o) {
  auto require = [](bool ok, const char* what) {
    if (!ok) throw std::invalid_argument(std::string("augment: AugmentOptions.") + what);
  };
  require(o.crop_scale_min > 0 && o.crop_scale_min <= o.crop_scale_max && o.crop_scale_max <= 1,
          "crop_scale_min/max must satisfy 0 < min <= max <= 1");
  require(o.crop_ratio_min > 0 && o.crop_ratio_min <= o.crop_ratio_max && std::isfinite(o.crop_ratio_max),
          "crop_ratio_min/max must satisfy 0 < min <= max");
  require(o.hflip >= 0 && o.hflip <= 1, "hflip must be a probability in [0, 1]");
  require(o.rotate_degrees >= 0 && std::isfinite(o.rotate_degrees), "rotate_degrees must be >= 0");
  require(o.brightness >= 0 && std::isfinite(o.brightness), "brightness must be >= 0");
  require(o.contrast >= 0 && std::isfinite(o.contrast), "contrast must be >= 0");
}

}  // namespace

at::Tensor resize(const at::Tensor& image, int64_t height, int64_t width) {
  check_image(image, "resize");
  if (height < 1 || width < 1)
    throw std::invalid_argument("resize: size must be at least 1x1, got " + std::to_string(height) + "x" +
                                std::to_string(width));
  // Upsampling with the antialiasing kernel is plain bilinear anyway; asking
  // for it only when an axis shrinks keeps the common kernel on the fast path.
  const bool shrinks = height < image.size(1) || width < image.size(2);
  return F::interpolate(image.unsqueeze(0), F::InterpolateFuncOptions()
                                                .size(std::vector<int64_t>{height, width})
                                                .mode(torch::kBilinear)
                                                .align_corners(false)
                                                .antialias(shrinks))
      .squeeze(0);
}

at::Tensor augment(const at::Tensor& image, int64_t size, const AugmentOptions& options, uint64_t seed) {
  check_image(image, "augment");
  if (size < 1) throw std::invalid_argument("augment: size must be at least 1, got " + std::to_string(size));
  if (!options.enabled) return resize(image, size, size);
  check_options(options);

  // Draw order is part of the contract: the same seed gives the same view.
  SplitMix64 rng(seed);
  const int64_t C = image.size(0), H = image.size(1), W = image.size(2);
  const Crop crop = random_crop(H, W, options, rng);
  const double flip = rng.uniform() < options.hflip ? -1.0 : 1.0;
  const double angle = rng.uniform(-options.rotate_degrees, options.rotate_degrees) * kPi / 180;
  const double brightness = rng.uniform(std::max(0.0, 1 - options.brightness), 1 + options.brightness);
  const double contrast = rng.uniform(std::max(0.0, 1 - options.contrast), 1 + options.contrast);

  // Output pixel (x, y) in [-1, 1]^2 is rotated (the output is square, so this
  // is a true rotation, applied after the resize as torchvision applies it),
  // mirrored, then scaled and moved onto the crop, in the input's normalized
  // coordinates: one grid_sample does crop, resize, flip and rotation with a
  // single interpolation.
  const double c = std::cos(angle), s = std::sin(angle);
  const double sx = flip * crop.width / W, sy = static_cast<double>(crop.height) / H;
  const double cx = 2.0 * (crop.left + crop.width / 2.0) / W - 1;
  const double cy = 2.0 * (crop.top + crop.height / 2.0) / H - 1;
  const at::Tensor theta =
      torch::tensor({sx * c, -sx * s, cx, sy * s, sy * c, cy}, torch::kDouble).view({1, 2, 3}).to(image.options());

  // Bilinear sampling reads 2x2 pixels, so a crop much larger than `size`
  // would alias; shrinking the whole image first (antialiased) until the crop
  // is about `size` pixels leaves grid_sample no more than 2x2 to average.
  // Normalized coordinates do not change with resolution, so theta holds.
  at::Tensor source = image;
  const auto shrunk = [size](int64_t full, int64_t part) {
    return part > size ? std::max<int64_t>(1, std::llround(static_cast<double>(full) * size / part)) : full;
  };
  const int64_t h = shrunk(H, crop.height), w = shrunk(W, crop.width);
  if (h != H || w != W) source = resize(image, h, w);

  // Border padding, not zeros: with align_corners=false the outer half pixel
  // of every view lies outside the image, and zeros would darken that rim of
  // every sample, rotated or not (and make an unrotated view differ from
  // resize). The price is that a rotation's corners repeat edge pixels instead
  // of turning black; at a few degrees those corners are small.
  const at::Tensor grid = F::affine_grid(theta, {1, C, size, size}, /*align_corners=*/false);
  at::Tensor view =
      F::grid_sample(
          source.unsqueeze(0), grid,
          F::GridSampleFuncOptions().mode(torch::kBilinear).padding_mode(torch::kBorder).align_corners(false))
          .squeeze(0);

  // torchvision's adjust_brightness and adjust_contrast, each clamped; the
  // contrast pivot is the mean of the gray image with torchvision's weights,
  // which (gray being linear) is the weighted sum of the channel means. In
  // place: fresh 224x224 temporaries cost more in page faults than the
  // arithmetic.
  if (brightness != 1.0) view.mul_(brightness).clamp_(0, 1);
  if (contrast != 1.0) {
    const at::Tensor pivot =
        C == 3 ? (view.mean({1, 2}) * torch::tensor({0.2989, 0.587, 0.114}, view.options())).sum() : view.mean();
    view.mul_(contrast).add_(pivot * (1 - contrast)).clamp_(0, 1);
  }
  return view.clamp_(0, 1);
}

at::Tensor image_grid(const std::vector<at::Tensor>& images, int64_t columns, int64_t padding, double pad_value) {
  if (images.empty()) throw std::invalid_argument("image_grid: no images");
  if (columns < 1) throw std::invalid_argument("image_grid: columns must be at least 1");
  if (padding < 0) throw std::invalid_argument("image_grid: padding must be >= 0");
  const at::Tensor& first = images.front();
  if (!first.defined() || first.dim() != 3) throw std::invalid_argument("image_grid: expected [C, H, W] images");
  for (const auto& image : images)
    if (!image.defined() || image.sizes() != first.sizes())
      throw std::invalid_argument("image_grid: images differ in shape");

  const int64_t count = static_cast<int64_t>(images.size());
  const int64_t cols = std::min(columns, count), rows = (count + cols - 1) / cols;
  const int64_t C = first.size(0), H = first.size(1), W = first.size(2);
  at::Tensor grid =
      at::full({C, rows * (H + padding) + padding, cols * (W + padding) + padding}, pad_value, first.options());
  for (int64_t k = 0; k < count; ++k) {
    grid.narrow(1, (k / cols) * (H + padding) + padding, H)
        .narrow(2, (k % cols) * (W + padding) + padding, W)
        .copy_(images[k]);
  }
  return grid;
}

}  // namespace tandem::image
