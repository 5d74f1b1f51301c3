#pragma once
// 2D rotary position embedding for image tokens, as LightningDiT applies it to
// q and k (EVA-02's VisionRotaryEmbeddingFast), so that attention sees the
// offset between two patches in rows and in columns.
//
// Layout, for tokens of a grid_size x grid_size grid in row-major order
// (token n = row * grid_size + col, as the patch embedding flattens them) and
// a head of D dims (D a multiple of 4):
// - dims [0, D/2) rotate by the row, dims [D/2, D) by the column;
// - within each half, dims (2i, 2i+1) form a pair turned by the angle
//   pos * theta^(-4i/D), i = 0 .. D/4 - 1 (theta^(-2i/d) over the half's d = D/2):
//     out[2i]   = x[2i] cos(a) - x[2i+1] sin(a)
//     out[2i+1] = x[2i+1] cos(a) + x[2i] sin(a)
#include <torch/nn/module.h>
#include <torch/nn/pimpl.h>

#include <cstdint>

namespace vavae {

class VisionRopeImpl : public torch::nn::Module {
 public:
  VisionRopeImpl(int64_t head_dim, int64_t grid_size, double theta = 10000.0);

  // x [..., grid_size^2, head_dim] (e.g. q as [B, heads, T, D]) -> the same
  // shape and dtype, rotated.
  at::Tensor forward(const at::Tensor& x);

  // cos and sin of each token's angle per dim, [grid_size^2, head_dim]
  // (each angle twice, once per dim of its pair); buffers, under upstream's
  // names, so they follow the model to its device.
  at::Tensor freqs_cos, freqs_sin;
};
TORCH_MODULE(VisionRope);

}  // namespace vavae
