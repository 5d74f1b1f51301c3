#pragma once
// The fixed 2D sin-cos position embedding of DiT and LightningDiT (MAE's
// get_2d_sincos_pos_embed), added to the patch tokens once.
#include <ATen/core/Tensor.h>

#include <cstdint>

namespace vavae {

// [grid_size^2, dim] float32 for tokens in row-major order (n = row * grid_size
// + col); dim a multiple of 4. The first dim/2 features encode the column, the
// last dim/2 the row (MAE's meshgrid puts w first), each half as
// [sin(pos * w_k) for k, cos(pos * w_k) for k], w_k = 10000^(-k / (dim/4)),
// k = 0 .. dim/4 - 1. Computed in float64, as upstream's numpy does.
at::Tensor sincos_pos_embed_2d(int64_t dim, int64_t grid_size);

}  // namespace vavae
