#include "model/pos_embed.h"

#include <torch/torch.h>

#include <stdexcept>
#include <string>

namespace vavae {
namespace {

// [positions, dim]: sines then cosines of pos * 10000^(-k / (dim/2)).
at::Tensor sincos_1d(int64_t dim, const at::Tensor& positions) {
  const at::Tensor omega = torch::pow(10000.0, -torch::arange(dim / 2, positions.options()) / (dim / 2.0));
  const at::Tensor angles = torch::outer(positions, omega);
  return torch::cat({angles.sin(), angles.cos()}, 1);
}

}  // namespace

at::Tensor sincos_pos_embed_2d(int64_t dim, int64_t grid_size) {
  if (dim < 4 || dim % 4 != 0 || grid_size < 1) {
    throw std::invalid_argument(
        "sincos_pos_embed_2d: dim must be a positive multiple of 4 and grid_size positive, got " + std::to_string(dim) +
        " and " + std::to_string(grid_size));
  }
  const at::Tensor index = torch::arange(grid_size * grid_size, torch::TensorOptions().dtype(torch::kDouble));
  const at::Tensor rows = torch::floor(index / grid_size);
  const at::Tensor cols = index - rows * grid_size;
  return torch::cat({sincos_1d(dim / 2, cols), sincos_1d(dim / 2, rows)}, 1).to(torch::kFloat);
}

}  // namespace vavae
