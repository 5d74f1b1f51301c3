#pragma once
// BatchNorm's running statistics across ranks: estimated afresh for the
// weights a model holds now, and pooled over the ranks, whose shards of the
// data each gathered their own.
//
// Pooling (pool_running_stats) treats the ranks as equal shares of one
// sample: the pooled mean is the mean of the ranks' means, the pooled
// variance the mean of their variances plus the spread of their means
// (mean of (m_r - m)^2), as a variance over the union of the shares is. The
// sums run in float64, a Sum collective followed by a division by the world
// size (not ncclAvg's multiply), whatever the backend, so ranks that hold equal
// statistics keep them bitwise on any world size (a float32 mean of 3 equal
// values, summed then divided or multiplied by 1/3 as ncclAvg does, moves a
// sixth to a third of them by an ulp). Only these two buffers of each
// BatchNorm layer are statistics: the other floating buffers of a model
// (DiT's RoPE tables and pos_embed) are the same on every rank by
// construction, and averaging them could only move them.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>

#include "tandem/named_tensors.h"

namespace torch::nn {
class Module;
}

namespace tandem {

class Communicator;

// One BatchNorm1d/2d/3d layer that tracks running statistics: its name in
// the model ("" for the model itself, else "layer1.0.bn1") and its buffers.
struct RunningStats {
  std::string layer;
  at::Tensor mean, var;
};

// The model's BatchNorm layers that track running statistics, in module order.
std::vector<RunningStats> batch_norm_running_stats(torch::nn::Module& model);

// Pools each layer's statistics over the ranks of `comm` in place (the
// formula above); every rank ends with the same. A collective: every rank
// passes the same layers, in the same order.
void pool_running_stats(const std::vector<RunningStats>& stats, Communicator& comm);

// The running statistics of `model`'s BatchNorm layers, and, when `copies`
// holds tensors named as the model's buffers (an EMA's), the copies of
// those, pooled over the ranks; nothing else of either is touched. A
// collective.
void pool_batch_norm_buffers(torch::nn::Module& model, const NamedTensors& copies, Communicator& comm);

// Resets the running statistics of every BatchNorm1d/2d/3d layer of `model`,
// calls forward(i) for i in [0, batches) with the model in training mode and
// without gradients, the layers keeping the plain mean over those batches
// (momentum unset, then restored), and pools the statistics over the ranks
// of `comm` (null: this process alone) so that every rank holds the same.
// The model's mode is restored. Returns the number of batch-norm layers; with
// none, forward is never called. Every rank must call it with the same
// `batches`, since it ends in collectives.
int64_t recompute_batch_norm_stats(torch::nn::Module& model, int64_t batches,
                                   const std::function<void(int64_t)>& forward, Communicator* comm);

}  // namespace tandem
