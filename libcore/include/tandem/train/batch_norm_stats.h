#pragma once
// Batch-norm running statistics estimated afresh for the weights a model holds
// now. An average of weights (an EMA) never ran forward itself: the running
// statistics beside it are the live model's, gathered by other weights, and
// an evaluation in eval mode normalises with them. Running training batches
// through the averaged weights gives them their own, as SWA's update_bn does.
#include <cstdint>
#include <functional>

namespace torch::nn {
class Module;
}

namespace tandem {

class Communicator;

// Resets the running statistics of every BatchNorm1d/2d/3d layer of `model`,
// calls forward(i) for i in [0, batches) with the model in training mode and
// without gradients, the layers keeping the plain mean over those batches
// (momentum unset, then restored), and averages the statistics over the ranks
// of `comm` (null: this process alone) so that every rank holds the same.
// The model's mode is restored. Returns the number of batch-norm layers; with
// none, forward is never called. Every rank must call it with the same
// `batches`, since it ends in collectives.
int64_t recompute_batch_norm_stats(torch::nn::Module& model, int64_t batches,
                                   const std::function<void(int64_t)>& forward, Communicator* comm);

}  // namespace tandem
