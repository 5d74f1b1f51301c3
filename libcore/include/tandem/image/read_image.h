#pragma once
// Decoding image files (PNG, JPEG, BMP) into float tensors, for the apps that
// train on pictures: carotid reads ultrasound scans of any depth and layout,
// vavae reads spectrograms. Every source ends up as [channels, H, W] in [0, 1],
// so models never see how a file happened to be stored.
#include <ATen/core/Tensor.h>

#include <cstdint>
#include <stdexcept>
#include <string>

namespace tandem::image {

// A file that cannot be decoded: missing, empty, truncated, not an image, or a
// kind the decoder does not support. what() names the path and the reason.
struct ImageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// PNG, JPEG or BMP; 8 or 16 bits per sample; gray, gray+alpha, RGB or RGBA ->
// float32 [channels, H, W] in [0, 1] on the CPU. 16-bit files keep their full
// precision. channels 1 turns colour into luma with the ITU-R 601 weights
// (0.299, 0.587, 0.114), rounded to 8 bits for 8-bit files exactly as PIL's
// convert("L") does, so a model trained on a Python pipeline sees the same
// pixels; channels 3 replicates gray. Alpha is dropped, not composited.
// channels other than 1 or 3 throw std::invalid_argument.
at::Tensor read_image(const std::string& path, int64_t channels);

}  // namespace tandem::image
