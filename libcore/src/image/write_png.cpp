#include "tandem/image/write_png.h"

#include <ATen/ATen.h>

#include <stdexcept>
#include <string>

#include "stb_image_write.h"
#include "tandem/io/atomic_file.h"

namespace tandem::image {

void write_png(const std::string& path, const at::Tensor& image) {
  if (!image.defined() || image.dim() != 3 || (image.size(0) != 1 && image.size(0) != 3) || image.size(1) < 1 ||
      image.size(2) < 1)
    throw std::invalid_argument("write_png: " + path + ": expected a [1 or 3, H, W] image");
  if (!image.is_floating_point() && image.scalar_type() != at::kByte)
    throw std::invalid_argument("write_png: " + path + ": expected a floating or uint8 image");
  // save_image's rounding (x * 255 + 0.5, truncated), so files match the ones
  // a PyTorch run writes; the clamp first keeps out-of-range values from
  // wrapping around.
  const at::Tensor bytes =
      image.is_floating_point() ? image.detach().clamp(0, 1).mul(255).add_(0.5).to(at::kByte) : image.detach();
  // stb wants interleaved rows: [H, W, C].
  const at::Tensor pixels = bytes.to(at::kCPU).permute({1, 2, 0}).contiguous();
  const int h = static_cast<int>(pixels.size(0)), w = static_cast<int>(pixels.size(1));
  const int c = static_cast<int>(pixels.size(2));
  // Encoded in memory: stb's own file writer ignores a failed fwrite, and a
  // full disk would leave a cut PNG where a whole one was.
  std::string png;
  const auto append = [](void* to, void* data, int size) {
    static_cast<std::string*>(to)->append(static_cast<const char*>(data), static_cast<size_t>(size));
  };
  if (!stbi_write_png_to_func(append, &png, w, h, c, pixels.data_ptr<uint8_t>(), w * c))
    throw std::runtime_error(path + ": cannot encode PNG");
  write_bytes_atomically(path, png);
}

}  // namespace tandem::image
