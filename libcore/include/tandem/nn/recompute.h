#pragma once
// Activation recomputation (gradient checkpointing: HF's
// gradient_checkpointing, torch.utils.checkpoint with use_reentrant=True,
// llm.c's recompute). A block runs forward without autograd keeping its
// activations, only its inputs; backward runs the block again, with autograd
// on, under the autocast state and from the random state of the first run (so
// dropout draws the same masks), and back-propagates through that second run.
// Memory: the activations of one block at a time instead of all blocks';
// cost: a second forward of every block, about a third more compute.
//
// A parameter used by one recomputed block only (and nowhere else) gets its
// gradient once, from the inner backward, so GradSync's hooks fire as they do
// without recomputation; one shared with other blocks would get one per block,
// which GradSync refuses. Not differentiable with autograd::grad(inputs) (as
// torch.utils.checkpoint's reentrant variant): backward() only. Buffers the second
// run would update again (batch-norm running statistics) are put back as the
// first run left them. Where a block's forward is deterministic (fp32 on the
// CPU) the gradients are bitwise those without recomputation.
//
// LibTorch's C++ API has no checkpoint: this is a torch::autograd::Function.
// Unlike torch.utils.checkpoint, the first run records autograd too (and
// drops the graph at once), so that both runs take the same kernels.
// It is on only while a RecomputeScope says so and autograd records, and at
// least one input requires a gradient (else backward would not reach the
// block's parameters); otherwise the block is simply called.
#include <ATen/core/Tensor.h>

#include <functional>

namespace torch::nn {
class Module;
}

namespace tandem::nn {

// A block's forward on up to two tensors (the second may be undefined). It
// is called again in backward, after the call site has returned: capture by
// value.
using BlockForward = std::function<at::Tensor(const at::Tensor& a, const at::Tensor& b)>;

// forward(a, b), recomputed in backward when recomputation is on. `block` is
// the module whose buffers the second run must not change.
at::Tensor recomputed(torch::nn::Module& block, const BlockForward& forward, const at::Tensor& a,
                      const at::Tensor& b = {});

// Recomputation is on in this thread while a scope constructed with true
// lives (the Trainer opens one around the training forward with
// train.recompute = "blocks").
class RecomputeScope {
 public:
  explicit RecomputeScope(bool on);
  ~RecomputeScope();
  RecomputeScope(const RecomputeScope&) = delete;
  RecomputeScope& operator=(const RecomputeScope&) = delete;

 private:
  bool previous_;
};

}  // namespace tandem::nn
