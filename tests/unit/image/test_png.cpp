// write_png: the bytes it puts in the file (checked without stb's reader, from
// the PNG header itself), its rounding, and what it refuses.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "tandem/image/read_image.h"
#include "tandem/image/write_png.h"
#include "../test_support.h"

namespace {

using tandem::image::read_image;
using tandem::image::write_png;

class ImagePngTest : public tandem::testing::TempDirTest {
 protected:
  std::string slurp(const std::string& name) {
    std::ifstream in(path(name), std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  }
  static uint32_t u32(const std::string& bytes, size_t at) {
    uint32_t v = 0;
    for (size_t i = 0; i < 4; ++i) v = (v << 8) | static_cast<unsigned char>(bytes[at + i]);
    return v;
  }
};

TEST_F(ImagePngTest, HeaderSaysSizeDepthAndColourType) {
  write_png(path("rgb.png"), torch::zeros({3, 5, 7}));
  write_png(path("gray.png"), torch::zeros({1, 2, 9}, torch::kByte));
  const std::string rgb = slurp("rgb.png"), gray = slurp("gray.png");
  ASSERT_EQ(rgb.substr(0, 8), std::string("\x89PNG\r\n\x1a\n"));
  ASSERT_EQ(rgb.substr(12, 4), "IHDR");
  EXPECT_EQ(u32(rgb, 16), 7u);  // width
  EXPECT_EQ(u32(rgb, 20), 5u);  // height
  EXPECT_EQ(rgb[24], 8);        // bits per sample
  EXPECT_EQ(rgb[25], 2);        // RGB
  EXPECT_EQ(u32(gray, 16), 9u);
  EXPECT_EQ(u32(gray, 20), 2u);
  EXPECT_EQ(gray[25], 0);  // gray
}

TEST_F(ImagePngTest, FloatsAreClampedAndRoundedLikeSaveImage) {
  // x * 255 + 0.5 truncated: 0.2 -> 51.5 -> 51, 0.5 -> 128, 0.999 -> 255,
  // 1/255 -> 1; out of range clamps to 0 and 255.
  write_png(path("f.png"), torch::tensor({-0.3f, 0.2f, 0.5f, 0.999f, 1.f / 255, 1.5f}).view({1, 2, 3}));
  EXPECT_TRUE(torch::equal(read_image(path("f.png"), 1),
                           torch::tensor({0, 51, 128, 255, 1, 255}, torch::kFloat).view({1, 2, 3}) / 255));
}

TEST_F(ImagePngTest, ReplacesAnExistingFileAndLeavesNoTemporary) {
  write_png(path("out.png"), torch::zeros({1, 4, 4}));
  write_png(path("out.png"), torch::ones({1, 3, 2}));
  EXPECT_TRUE(torch::equal(read_image(path("out.png"), 1), torch::ones({1, 3, 2})));
  int files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir_)) files += entry.is_regular_file();
  EXPECT_EQ(files, 1);
}

TEST_F(ImagePngTest, RejectsOtherShapesAndDtypes) {
  EXPECT_THROW(write_png(path("a.png"), torch::zeros({4, 4})), std::invalid_argument);
  EXPECT_THROW(write_png(path("a.png"), torch::zeros({2, 4, 4})), std::invalid_argument);
  EXPECT_THROW(write_png(path("a.png"), torch::zeros({4, 4, 4})), std::invalid_argument);
  EXPECT_THROW(write_png(path("a.png"), torch::zeros({1, 1, 4, 4})), std::invalid_argument);
  EXPECT_THROW(write_png(path("a.png"), torch::zeros({3, 4, 4}, torch::kInt32)), std::invalid_argument);
  EXPECT_FALSE(std::filesystem::exists(path("a.png")));
}

TEST_F(ImagePngTest, UnwritablePathThrowsNamingIt) {
  const std::string target = path("no-such-dir/out.png");
  const std::string message = tandem::testing::message_of<std::runtime_error>([&] {
    write_png(target, torch::zeros({1, 2, 2}));
  });
  EXPECT_NE(message.find(target), std::string::npos) << message;
}

}  // namespace
