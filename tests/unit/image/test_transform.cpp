// resize, augment and image_grid against values worked by hand (bilinear and
// antialiased weights, grid layout) and against each other (augment's
// degenerate configurations reduce to resize and flip).
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>
#include <set>
#include <utility>
#include <vector>

#include "tandem/image/transform.h"

namespace {

using tandem::image::augment;
using tandem::image::AugmentOptions;
using tandem::image::image_grid;
using tandem::image::resize;

at::Tensor ramp(int64_t c, int64_t h, int64_t w) {
  return torch::arange(c * h * w, torch::kFloat).view({c, h, w}) / (c * h * w);
}

AugmentOptions flip_only() {
  AugmentOptions o;
  o.crop_scale_min = o.crop_scale_max = 1;
  o.crop_ratio_min = o.crop_ratio_max = 1;
  o.hflip = 1;
  o.rotate_degrees = 0;
  o.brightness = o.contrast = 0;
  return o;
}

TEST(ImageResize, ConstantImageStaysConstant) {
  const at::Tensor image = torch::full({3, 7, 5}, 0.37f);
  for (auto [h, w] : std::vector<std::pair<int64_t, int64_t>>{{13, 4}, {2, 2}, {224, 224}}) {
    const at::Tensor out = resize(image, h, w);
    ASSERT_EQ(out.sizes(), (std::vector<int64_t>{3, h, w}));
    EXPECT_TRUE(torch::allclose(out, torch::full({3, h, w}, 0.37f), 0, 1e-6)) << h << "x" << w;
  }
}

TEST(ImageResize, TwoByTwoToFourByFourIsBilinear) {
  // align_corners=false samples at source -0.25, 0.25, 0.75, 1.25, clamped to
  // the edge: each axis blends [a, b] as a, (3a+b)/4, (a+3b)/4, b.
  const at::Tensor image = torch::tensor({0, 4, 8, 12}, torch::kFloat).view({1, 2, 2}) / 12;
  const at::Tensor expected =
      torch::tensor({0, 1, 3, 4, 2, 3, 5, 6, 6, 7, 9, 10, 8, 9, 11, 12}, torch::kFloat).view({1, 4, 4}) / 12;
  EXPECT_TRUE(torch::allclose(resize(image, 4, 4), expected, 0, 1e-6));
}

TEST(ImageResize, ShrinkingIsAntialiased) {
  // Halving uses a triangle twice as wide: output 0 (centre 1.0) weighs the
  // pixels at 0.5, 1.5, 2.5 by 0.75, 0.75, 0.25, output 1 (centre 3.0) those at
  // 1.5, 2.5, 3.5 by 0.25, 0.75, 0.75: (0*3 + 7*3 + 14) / 7 = 5 and
  // (7 + 14*3 + 21*3) / 7 = 16. Plain bilinear would give 3.5 and 17.5.
  const at::Tensor image = torch::tensor({0, 7, 14, 21}, torch::kFloat).repeat({4}).view({1, 4, 4}) / 21;
  const at::Tensor expected = torch::tensor({5, 16, 5, 16}, torch::kFloat).view({1, 2, 2}) / 21;
  EXPECT_TRUE(torch::allclose(resize(image, 2, 2), expected, 0, 1e-6));
}

TEST(ImageResize, RejectsWhatIsNotAFloatImage) {
  EXPECT_THROW(resize(torch::zeros({4, 4}), 2, 2), std::invalid_argument);
  EXPECT_THROW(resize(torch::zeros({1, 4, 4}, torch::kByte), 2, 2), std::invalid_argument);
  EXPECT_THROW(resize(torch::zeros({1, 4, 4}), 0, 2), std::invalid_argument);
}

TEST(ImageAugment, SameSeedSameViewOtherSeedOtherView) {
  const at::Tensor image = ramp(3, 40, 60);
  const AugmentOptions options;
  const at::Tensor a = augment(image, 28, options, 42);
  EXPECT_TRUE(torch::equal(a, augment(image, 28, options, 42)));
  EXPECT_FALSE(torch::equal(a, augment(image, 28, options, 43)));
}

TEST(ImageAugment, LeavesTheGlobalGeneratorAlone) {
  torch::manual_seed(7);
  const at::Tensor expected = torch::rand({4});
  torch::manual_seed(7);
  augment(ramp(1, 16, 16), 8, AugmentOptions{}, 1);
  EXPECT_TRUE(torch::equal(torch::rand({4}), expected));
}

TEST(ImageAugment, ShapeAndRangeHoldForAnyInput) {
  AugmentOptions strong;
  strong.crop_scale_min = 0.1;
  strong.rotate_degrees = 45;
  strong.brightness = strong.contrast = 0.9;
  const at::Tensor bright = torch::ones({3, 31, 57});
  for (uint64_t seed = 0; seed < 20; ++seed) {
    const at::Tensor out = augment(seed % 2 ? bright : ramp(3, 31, 57), 28, strong, seed);
    ASSERT_EQ(out.sizes(), (std::vector<int64_t>{3, 28, 28}));
    EXPECT_GE(out.min().item<float>(), 0.f);
    EXPECT_LE(out.max().item<float>(), 1.f);
  }
  EXPECT_EQ(augment(ramp(1, 300, 200), 224, strong, 3).sizes(), (std::vector<int64_t>{1, 224, 224}));
}

TEST(ImageAugment, DisabledIsResize) {
  AugmentOptions off;
  off.enabled = false;
  const at::Tensor image = ramp(3, 30, 50);
  EXPECT_TRUE(torch::equal(augment(image, 20, off, 5), resize(image, 20, 20)));
}

TEST(ImageAugment, FlipOnlyIsTheMirroredResize) {
  // Same size, shrinking (through the antialiasing prefilter) and growing.
  for (int64_t side : {12, 24, 6}) {
    const at::Tensor image = ramp(3, side, side);
    const at::Tensor expected = resize(image, 12, 12).flip({2});
    EXPECT_TRUE(torch::allclose(augment(image, 12, flip_only(), 9), expected, 0, 1e-5)) << side;
  }
}

TEST(ImageAugment, CropIsASubImageOfTheDrawnSize) {
  // A quarter of the area at ratio 1 is an 8x8 crop of 16x16; at output size 8
  // and no flip, rotation or colour it must be the pixels of some 8x8 window.
  AugmentOptions o = flip_only();
  o.crop_scale_min = o.crop_scale_max = 0.25;
  o.hflip = 0;
  const at::Tensor image = ramp(1, 16, 16);
  std::set<std::pair<int64_t, int64_t>> corners;
  for (uint64_t seed = 0; seed < 10; ++seed) {
    const at::Tensor out = augment(image, 8, o, seed);
    // The ramp's top-left value says where the window starts.
    const auto at = std::llround(out[0][0][0].item<float>() * 256);
    const int64_t top = at / 16, left = at % 16;
    ASSERT_LE(top, 8);
    ASSERT_LE(left, 8);
    EXPECT_TRUE(torch::allclose(out, image.slice(1, top, top + 8).slice(2, left, left + 8), 0, 1e-5)) << seed;
    corners.emplace(top, left);
  }
  EXPECT_GT(corners.size(), 1u);
}

TEST(ImageAugment, RotationPadsWithTheBorderNotBlack) {
  // Zeros padding would darken the corners a rotation uncovers.
  AugmentOptions o;
  o.rotate_degrees = 30;
  o.brightness = o.contrast = 0;
  for (uint64_t seed = 0; seed < 5; ++seed)
    EXPECT_TRUE(
        torch::allclose(augment(torch::full({3, 20, 30}, 0.6f), 16, o, seed), torch::full({3, 16, 16}, 0.6f), 0, 1e-6));
}

TEST(ImageAugment, RejectsOptionsOutOfRange) {
  AugmentOptions bad;
  bad.crop_scale_min = 0;
  EXPECT_THROW(augment(ramp(1, 8, 8), 4, bad, 0), std::invalid_argument);
  bad = AugmentOptions{};
  bad.hflip = 1.5;
  EXPECT_THROW(augment(ramp(1, 8, 8), 4, bad, 0), std::invalid_argument);
  EXPECT_THROW(augment(ramp(1, 8, 8), 0, AugmentOptions{}, 0), std::invalid_argument);
}

TEST(ImageGrid, TilesRowByRowWithPadding) {
  // Three 2x2 images a, b, c in two columns, padding 1 of 9:
  //   9 9 9 9 9 9 9
  //   9 a a 9 b b 9
  //   9 a a 9 b b 9
  //   9 9 9 9 9 9 9
  //   9 c c 9 9 9 9
  //   9 c c 9 9 9 9
  //   9 9 9 9 9 9 9
  const std::vector<at::Tensor> images = {torch::full({1, 2, 2}, 1.f), torch::full({1, 2, 2}, 2.f),
                                          torch::full({1, 2, 2}, 3.f)};
  const at::Tensor expected = torch::tensor({9, 9, 9, 9, 9, 9, 9,  //
                                             9, 1, 1, 9, 2, 2, 9,  //
                                             9, 1, 1, 9, 2, 2, 9,  //
                                             9, 9, 9, 9, 9, 9, 9,  //
                                             9, 3, 3, 9, 9, 9, 9,  //
                                             9, 3, 3, 9, 9, 9, 9,  //
                                             9, 9, 9, 9, 9, 9, 9},
                                            torch::kFloat)
                                  .view({1, 7, 7});
  EXPECT_TRUE(torch::equal(image_grid(images, 2, 1, 9), expected));
}

TEST(ImageGrid, FewerImagesThanColumnsMakeOneRow) {
  const at::Tensor grid = image_grid({torch::zeros({3, 4, 5}), torch::zeros({3, 4, 5})}, 8);
  EXPECT_EQ(grid.sizes(), (std::vector<int64_t>{3, 4 + 2 * 2, 2 * 5 + 3 * 2}));
  EXPECT_EQ(grid.sum().item<float>(), grid.numel() - 2 * 3 * 4 * 5);
}

TEST(ImageGrid, RejectsMixedShapesAndNoImages) {
  EXPECT_THROW(image_grid({}, 2), std::invalid_argument);
  EXPECT_THROW(image_grid({torch::zeros({1, 2, 2}), torch::zeros({1, 2, 3})}, 2), std::invalid_argument);
  EXPECT_THROW(image_grid({torch::zeros({1, 2, 2})}, 0), std::invalid_argument);
}

}  // namespace
