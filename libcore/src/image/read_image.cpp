#include "tandem/image/read_image.h"

#include <ATen/ATen.h>

#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstring>
#include <memory>
#include <vector>

#include "jpeg_tables.h"
#include "stb_image.h"

namespace tandem::image {
namespace {

std::vector<unsigned char> read_bytes(const std::string& path) {
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> file(std::fopen(path.c_str(), "rb"), &std::fclose);
  if (!file) throw ImageError(path + ": cannot open: " + std::strerror(errno));
  std::vector<unsigned char> bytes;
  unsigned char buffer[1 << 16];
  size_t n;
  while ((n = std::fread(buffer, 1, sizeof buffer, file.get())) > 0) bytes.insert(bytes.end(), buffer, buffer + n);
  if (std::ferror(file.get())) throw ImageError(path + ": cannot read: " + std::strerror(errno));
  return bytes;
}

// PIL's convert("L") in its own fixed point (weights scaled by 2^16, rounded
// to nearest), so 8-bit luma matches PIL's to the last bit.
inline float luma(const uint8_t* p) {
  return static_cast<float>((p[0] * 19595u + p[1] * 38470u + p[2] * 7471u + 0x8000u) >> 16);
}

// 16-bit samples have no PIL reference to match; rounding them to an integer
// level would throw away the precision they were stored for.
inline float luma(const uint16_t* p) { return 0.299f * p[0] + 0.587f * p[1] + 0.114f * p[2]; }

// Interleaved samples (stride `in_channels`) -> planar [channels, h, w] float,
// divided by `max` (not multiplied by its reciprocal) so that 8-bit values come
// out bit-identical to torchvision's ToTensor.
template <class Sample>
at::Tensor to_planar(const Sample* pixels, int h, int w, int in_channels, int64_t channels, float max) {
  at::Tensor out = at::empty({channels, h, w}, at::kFloat);
  float* planes = out.data_ptr<float>();
  const int64_t area = static_cast<int64_t>(h) * w;
  const bool colour = in_channels >= 3;
  for (int64_t i = 0; i < area; ++i) {
    const Sample* p = pixels + i * in_channels;
    if (channels == 1) {
      planes[i] = (colour ? luma(p) : static_cast<float>(p[0])) / max;
    } else {
      for (int64_t c = 0; c < 3; ++c) planes[c * area + i] = p[colour ? c : 0] / max;
    }
  }
  return out;
}

}  // namespace

at::Tensor read_image(const std::string& path, int64_t channels) {
  if (channels != 1 && channels != 3)
    throw std::invalid_argument("read_image: channels must be 1 or 3, got " + std::to_string(channels) + " (" + path +
                                ")");
  const std::vector<unsigned char> bytes = read_bytes(path);
  if (bytes.empty()) throw ImageError(path + ": cannot decode image: empty file");
  if (bytes.size() > static_cast<size_t>(INT_MAX)) throw ImageError(path + ": cannot decode image: file over 2 GiB");
  const int size = static_cast<int>(bytes.size());
  if (const std::string reason = unsafe_jpeg_reason(bytes.data(), bytes.size()); !reason.empty())
    throw ImageError(path + ": cannot decode image: " + reason);

  int w = 0, h = 0, in_channels = 0;
  at::Tensor out;
  // stb's failure reason is thread-local, so loader threads decoding at the
  // same time each get their own.
  if (stbi_is_16_bit_from_memory(bytes.data(), size)) {
    std::unique_ptr<stbi_us, void (*)(void*)> pixels(
        stbi_load_16_from_memory(bytes.data(), size, &w, &h, &in_channels, 0), &stbi_image_free);
    if (pixels) out = to_planar(pixels.get(), h, w, in_channels, channels, 65535.0f);
  } else {
    std::unique_ptr<stbi_uc, void (*)(void*)> pixels(stbi_load_from_memory(bytes.data(), size, &w, &h, &in_channels, 0),
                                                     &stbi_image_free);
    if (pixels) out = to_planar(pixels.get(), h, w, in_channels, channels, 255.0f);
  }
  if (!out.defined()) throw ImageError(path + ": cannot decode image: " + stbi_failure_reason());
  // stb accepts some damaged headers as an image without pixels (found by fuzz_image).
  if (out.numel() == 0)
    throw ImageError(path + ": cannot decode image: it has no pixels (" + std::to_string(w) + " x " +
                     std::to_string(h) + ")");
  return out;
}

}  // namespace tandem::image
