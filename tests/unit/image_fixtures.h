#pragma once
// Images whose pixels are known, for the image tests and the fuzz seeds: a
// byte pattern, its layout for stb's writers, and a 16-bit PNG assembled by
// hand (no writer here, stb or write_png, produces 16-bit files).
#include <torch/torch.h>

#include <cstdint>
#include <string>
#include <vector>

namespace tandem::testing {

// [c, h, w] uint8 whose bytes all differ from their neighbours.
inline at::Tensor pattern(int64_t c, int64_t h, int64_t w) {
  return (torch::arange(c * h * w, torch::kInt32) * 37 % 256).to(torch::kByte).view({c, h, w});
}

// [C, H, W] uint8 -> [H, W, C] bytes, the layout stb's writers take.
inline std::vector<uint8_t> interleaved(const at::Tensor& chw) {
  const at::Tensor hwc = chw.permute({1, 2, 0}).contiguous();
  return {hwc.data_ptr<uint8_t>(), hwc.data_ptr<uint8_t>() + hwc.numel()};
}

inline void put_u32(std::string& out, uint32_t v) {
  for (int shift = 24; shift >= 0; shift -= 8) out += static_cast<char>((v >> shift) & 0xff);
}

inline uint32_t crc32(const std::string& bytes) {
  uint32_t crc = 0xffffffffu;
  for (unsigned char b : bytes) {
    crc ^= b;
    for (int k = 0; k < 8; ++k) crc = (crc >> 1) ^ (0xedb88320u & (0u - (crc & 1u)));
  }
  return ~crc;
}

inline void put_chunk(std::string& png, const std::string& type, const std::string& data) {
  put_u32(png, static_cast<uint32_t>(data.size()));
  png += type + data;
  put_u32(png, crc32(type + data));
}

// A 16-bit PNG (colour type 0 gray or 2 RGB) of `samples`, row-major and
// interleaved, big-endian as PNG stores them, each row unfiltered; small
// enough (< 64 KiB) for one stored deflate block.
inline std::string png16(int w, int h, int channels, const std::vector<uint16_t>& samples) {
  std::string raw;
  for (int y = 0; y < h; ++y) {
    raw += '\0';
    for (int i = 0; i < w * channels; ++i) {
      const uint16_t v = samples[static_cast<size_t>(y * w * channels + i)];
      raw += static_cast<char>(v >> 8);
      raw += static_cast<char>(v & 0xff);
    }
  }
  // zlib around one stored (uncompressed) deflate block, then Adler-32.
  std::string idat = "\x78\x01\x01";
  const auto len = static_cast<uint16_t>(raw.size());
  idat += {static_cast<char>(len & 0xff), static_cast<char>(len >> 8), static_cast<char>(~len & 0xff),
           static_cast<char>((~len >> 8) & 0xff)};
  idat += raw;
  uint32_t a = 1, b = 0;
  for (unsigned char c : raw) {
    a = (a + c) % 65521;
    b = (b + a) % 65521;
  }
  put_u32(idat, (b << 16) | a);

  std::string ihdr;
  put_u32(ihdr, static_cast<uint32_t>(w));
  put_u32(ihdr, static_cast<uint32_t>(h));
  ihdr += std::string{16, static_cast<char>(channels == 3 ? 2 : 0), 0, 0, 0};
  std::string png = "\x89PNG\r\n\x1a\n";
  put_chunk(png, "IHDR", ihdr);
  put_chunk(png, "IDAT", idat);
  put_chunk(png, "IEND", "");
  return png;
}

}  // namespace tandem::testing
