#pragma once
// The squared 2-norm of the gradients, the figure clipping and the logged
// grad_norm come from, accurate however the gradients are cut.
//
// torch.nn.utils.clip_grad_norm_ takes a norm per tensor, then the norm of
// those, each accumulated in the gradients' dtype. Over a float32 tensor of
// millions of elements that sum of squares drifts by about 1e-5 of itself
// (7e-5 for 4M elements on the CPU), and differently for every grouping of
// the same elements: ZeRO-2's blocks of a group (dist.shard = "gradients")
// and the unsharded tensors gave norms 3e-5 apart on the same gradients.
// Here each tensor is cut into runs of at most kRun elements, each run's
// norm accumulated in float64 (_foreach_norm's dtype, which casts one run at
// a time: the temporary is bounded by the run, not the tensor) and the
// squares summed in float64. Any cut of the same elements then agrees to
// about 1e-13, well below what one float32 rounding of the result is.
#include <ATen/core/Tensor.h>

#include <cstdint>
#include <vector>

namespace tandem {

// Elements per run: 8 MiB of float64 when a run is cast.
constexpr int64_t kNormRun = int64_t{1} << 20;

// The sum of the squares of every element of `grads` (dense tensors, any
// floating dtype, one device), as a float64 scalar on that device (a CPU
// zero when there is none); NaN or inf when any element is. Without
// gradient recording.
at::Tensor grad_sum_of_squares(const std::vector<at::Tensor>& grads);

}  // namespace tandem
