// read_image against files whose pixels the test knows: written by write_png or
// stb's writers, or (16-bit, which no writer here produces) assembled by hand.
#include <gtest/gtest.h>
#include "stb_image_write.h"
#include <torch/torch.h>

#include <cstdint>
#include <fstream>
#include <string>
#include <vector>

#include "tandem/image/read_image.h"
#include "tandem/image/write_png.h"
#include "../image_fixtures.h"
#include "../test_support.h"

namespace {

using tandem::image::ImageError;
using tandem::image::read_image;
using tandem::image::write_png;
using tandem::testing::message_of;
using tandem::testing::interleaved;
using tandem::testing::pattern;
using tandem::testing::png16;

class ImageReadTest : public tandem::testing::TempDirTest {
 protected:
  void put(const std::string& name, const std::string& bytes) { std::ofstream(path(name), std::ios::binary) << bytes; }
};

TEST_F(ImageReadTest, GrayPngRoundTripsExactly) {
  const at::Tensor bytes = pattern(1, 5, 7);
  write_png(path("g.png"), bytes);
  const at::Tensor image = read_image(path("g.png"), 1);
  EXPECT_EQ(image.scalar_type(), at::kFloat);
  EXPECT_TRUE(torch::equal(image, bytes.to(torch::kFloat) / 255));
}

TEST_F(ImageReadTest, RgbPngRoundTripsExactly) {
  const at::Tensor bytes = pattern(3, 4, 6);
  write_png(path("rgb.png"), bytes);
  EXPECT_TRUE(torch::equal(read_image(path("rgb.png"), 3), bytes.to(torch::kFloat) / 255));
}

TEST_F(ImageReadTest, GrayAsThreeChannelsIsReplicated) {
  const at::Tensor bytes = pattern(1, 3, 4);
  write_png(path("g.png"), bytes);
  const at::Tensor image = read_image(path("g.png"), 3);
  ASSERT_EQ(image.sizes(), (std::vector<int64_t>{3, 3, 4}));
  for (int64_t c = 0; c < 3; ++c) EXPECT_TRUE(torch::equal(image[c], bytes[0].to(torch::kFloat) / 255));
}

TEST_F(ImageReadTest, RgbAsOneChannelIsPilLuma) {
  // Pixels (R, G, B) and round(0.299 R + 0.587 G + 0.114 B) worked by hand:
  // 76.245, 149.685, 29.07, 18.15, 140.75, 255.
  const at::Tensor rgb = torch::tensor({255, 0, 0, 10, 100, 255,  //
                                        0, 255, 0, 20, 150, 255,  //
                                        0, 0, 255, 30, 200, 255},
                                       torch::kByte)
                             .view({3, 1, 6});
  write_png(path("rgb.png"), rgb);
  const at::Tensor expected = torch::tensor({76, 150, 29, 18, 141, 255}, torch::kFloat).view({1, 1, 6}) / 255;
  EXPECT_TRUE(torch::equal(read_image(path("rgb.png"), 1), expected));
}

TEST_F(ImageReadTest, AlphaIsDropped) {
  const std::vector<uint8_t> rgba = {10, 20, 30, 0, 40, 50, 60, 255};
  ASSERT_TRUE(stbi_write_png(path("rgba.png").c_str(), 2, 1, 4, rgba.data(), 8));
  EXPECT_TRUE(torch::equal(read_image(path("rgba.png"), 3),
                           torch::tensor({10, 40, 20, 50, 30, 60}, torch::kFloat).view({3, 1, 2}) / 255));
  const std::vector<uint8_t> gray_alpha = {7, 0, 200, 128};
  ASSERT_TRUE(stbi_write_png(path("ga.png").c_str(), 2, 1, 2, gray_alpha.data(), 4));
  EXPECT_TRUE(
      torch::equal(read_image(path("ga.png"), 1), torch::tensor({7, 200}, torch::kFloat).view({1, 1, 2}) / 255));
}

TEST_F(ImageReadTest, SixteenBitGrayKeepsFullPrecision) {
  const std::vector<uint16_t> samples = {0, 1, 257, 12345, 65534, 65535};
  put("g16.png", png16(3, 2, 1, samples));
  const at::Tensor image = read_image(path("g16.png"), 1);
  const at::Tensor expected = torch::tensor({0, 1, 257, 12345, 65534, 65535}, torch::kFloat).view({1, 2, 3}) / 65535;
  EXPECT_TRUE(torch::equal(image, expected));
  // 1 and 65534 would collapse onto 0 and 255 levels at 8 bits.
  EXPECT_GT(image[0][0][1].item<float>(), 0.f);
  EXPECT_LT(image[0][1][1].item<float>(), 1.f);
}

TEST_F(ImageReadTest, SixteenBitRgbReadsAsColourAndLuma) {
  const std::vector<uint16_t> samples = {65535, 0, 0, 1000, 2000, 3000};
  put("rgb16.png", png16(2, 1, 3, samples));
  EXPECT_TRUE(torch::equal(read_image(path("rgb16.png"), 3),
                           torch::tensor({65535, 1000, 0, 2000, 0, 3000}, torch::kFloat).view({3, 1, 2}) / 65535));
  // 0.299 * 65535 = 19594.965 and 299 + 1174 + 342 = 1815, not rounded.
  const at::Tensor luma = read_image(path("rgb16.png"), 1);
  EXPECT_NEAR(luma[0][0][0].item<float>(), 19594.965 / 65535, 1e-6);
  EXPECT_NEAR(luma[0][0][1].item<float>(), 1815.0 / 65535, 1e-6);
}

TEST_F(ImageReadTest, BmpDecodes) {
  const at::Tensor bytes = pattern(3, 3, 5);
  ASSERT_TRUE(stbi_write_bmp(path("p.bmp").c_str(), 5, 3, 3, interleaved(bytes).data()));
  EXPECT_TRUE(torch::equal(read_image(path("p.bmp"), 3), bytes.to(torch::kFloat) / 255));
}

TEST_F(ImageReadTest, JpegDecodesCloseToItsSource) {
  // A smooth image: JPEG at quality 100 keeps it within a few levels.
  const auto y = torch::arange(16).view({1, 16, 1}), x = torch::arange(16).view({1, 1, 16});
  const at::Tensor bytes =
      torch::cat({(y * 12 + x * 3), (x * 14 + 10).expand({1, 16, 16}), (255 - y * 8 - x * 6)}).to(torch::kByte);
  ASSERT_TRUE(stbi_write_jpg(path("p.jpg").c_str(), 16, 16, 3, interleaved(bytes).data(), 100));
  const at::Tensor image = read_image(path("p.jpg"), 3);
  ASSERT_EQ(image.sizes(), (std::vector<int64_t>{3, 16, 16}));
  EXPECT_LE((image - bytes.to(torch::kFloat) / 255).abs().max().item<float>(), 4.f / 255);
}

TEST_F(ImageReadTest, UnreadableFilesThrowImageErrorNamingThePath) {
  EXPECT_EQ(message_of<ImageError>([&] { read_image(path("missing.png"), 1); }),
            path("missing.png") + ": cannot open: No such file or directory");

  put("empty.png", "");
  EXPECT_EQ(message_of<ImageError>([&] { read_image(path("empty.png"), 1); }),
            path("empty.png") + ": cannot decode image: empty file");

  write_png(path("whole.png"), pattern(3, 32, 32));
  std::ifstream in(path("whole.png"), std::ios::binary);
  const std::string whole((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  put("cut.png", whole.substr(0, whole.size() / 2));
  const std::string cut = message_of<ImageError>([&] { read_image(path("cut.png"), 3); });
  EXPECT_EQ(cut.rfind(path("cut.png") + ": cannot decode image: ", 0), 0u) << cut;

  put("notes.png", "these are not pixels\n");
  EXPECT_EQ(message_of<ImageError>([&] { read_image(path("notes.png"), 1); }),
            path("notes.png") + ": cannot decode image: unknown image type");
}

// Found by fuzz_image: Debian's stb writes past a table for a Huffman table
// of more than 256 codes (AddressSanitizer saw it); such files are refused first.
TEST_F(ImageReadTest, JpegWithAnOversizedHuffmanTableIsRefusedBeforeStb) {
  ASSERT_TRUE(stbi_write_jpg(path("p.jpg").c_str(), 8, 8, 3, interleaved(pattern(3, 8, 8)).data(), 90));
  std::ifstream in(path("p.jpg"), std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const size_t dht = bytes.find("\xFF\xC4");
  ASSERT_NE(dht, std::string::npos);
  bytes[dht + 4 + 15] = bytes[dht + 4 + 16] = '\xFF';  // 255 codes of 15 bits and of 16 bits
  put("bad.jpg", bytes);
  const std::string message = message_of<ImageError>([&] { read_image(path("bad.jpg"), 3); });
  EXPECT_EQ(message.rfind(path("bad.jpg") + ": cannot decode image: a Huffman table (DHT) with ", 0), 0u) << message;
  EXPECT_NE(message.find("more than the 256 a JPEG allows"), std::string::npos) << message;
}

TEST_F(ImageReadTest, ChannelsOtherThanOneOrThreeAreRejected) {
  write_png(path("g.png"), pattern(1, 2, 2));
  EXPECT_THROW(read_image(path("g.png"), 2), std::invalid_argument);
  EXPECT_THROW(read_image(path("g.png"), 4), std::invalid_argument);
}

}  // namespace
