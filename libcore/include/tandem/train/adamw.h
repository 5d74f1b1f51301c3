#pragma once
// AdamW over named parameters, computing what torch.optim.AdamW(fused=True)
// computes, bit for bit (the unfused torch.optim.AdamW and torch::optim::AdamW
// agree to float rounding). We keep our own because LibTorch's C++
// optimizers key their state by TensorImpl address: that state cannot be saved
// by parameter name, restored into a freshly built model, or carried between
// runs with different world sizes, and resuming must reproduce an
// uninterrupted run bit for bit.
#include <ATen/core/Tensor.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "tandem/io/tensor_source.h"
#include "tandem/named_tensors.h"

namespace tandem {

class ParamShards;

struct AdamWOptions {
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  double weight_decay = 0.0;
};

class AdamW {
 public:
  // Whether weight decay applies to a parameter; asked once per parameter at
  // construction (the trainer's rule: dim >= 2 and not an embedding the task names).
  using DecayRule = std::function<bool(const std::string& name, const at::Tensor& param)>;

  // The tensors are shared with the model and updated in place, in their own
  // dtype (fp32 master weights). Names must be unique. With `shards` (built
  // over the same parameters, and outliving this), ZeRO-1: the optimizer
  // keeps moments of the rank's runs of each parameter alone, and step() and
  // state() are collectives that every rank calls.
  AdamW(NamedTensors params, AdamWOptions options, DecayRule decay, const ParamShards* shards = nullptr);

  // One update with learning rate `lr`. A parameter without a gradient is left
  // alone and its step count does not advance, as in torch. Sharded, each
  // rank updates its runs, then gathers everyone's (ParamShards::all_gather):
  // every rank must hold the same gradients, as after GradSync, and the
  // weights come out bitwise as an unsharded step leaves them. When the
  // shards hold the gradients (ZeRO-2) the runs' gradients are read there,
  // every parameter steps, and zero_grad() zeroes them.
  void step(double lr);

  // Drops the gradients (torch's set_to_none), so the next backward allocates
  // them afresh instead of adding to stale ones.
  void zero_grad();

  // "<name>.exp_avg", "<name>.exp_avg_sq" and "<name>.step" (0-d int64) per
  // parameter, in parameter order. The moments are shared, not copied (they are
  // twice the model's size): write them out before the next step. Sharded,
  // the whole moments are gathered into rank 0's host memory, one group of
  // parameters at a time (ParamShards::gather); other ranks get an empty set.
  NamedTensors state() const;

  // Copies `state` (whole tensors, as state() gives them on any world size or
  // sharding) in, converting dtype and device, a tensor at a time; sharded,
  // only the rank's runs of it, reading from a checkpoint file only the rows
  // they span. On any missing, unexpected or misshapen entry nothing is
  // changed and a UsageError lists them.
  void load_state(const TensorSource& state);
  void load_state(const NamedTensors& state);

  const NamedTensors& params() const { return params_; }
  const AdamWOptions& options() const { return options_; }
  bool decays(size_t index) const { return slots_.at(index).decay; }

 private:
  // The moments are the parameter's shape, or sharded its runs end to end.
  struct Slot {
    at::Tensor exp_avg;
    at::Tensor exp_avg_sq;
    int64_t step = 0;
    bool decay = false;
  };
  // The (parameter, gradient, exp_avg, exp_avg_sq) views of parameter i that
  // its update walks: the whole tensors, or sharded one per owned run.
  void add_views(size_t i, std::vector<at::Tensor> (&lists)[4]) const;
  // Parameter i's `moment` from the whole tensor a checkpoint holds.
  void load_moment(size_t i, at::Tensor& moment, const TensorSource& state, const std::string& key) const;

  NamedTensors params_;
  AdamWOptions options_;
  const ParamShards* shards_;
  std::vector<Slot> slots_;  // parallel to params_
};

}  // namespace tandem
