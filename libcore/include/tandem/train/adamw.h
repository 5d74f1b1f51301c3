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
#include <set>
#include <string>
#include <vector>

#include "tandem/io/tensor_source.h"
#include "tandem/named_tensors.h"
#include "tandem/train/blockwise8.h"

namespace tandem {

class ParamShards;
struct ElementRun;

struct AdamWOptions {
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  double weight_decay = 0.0;
  // train.optimizer_state = "8bit": the moments of the parameters keeps_8bit
  // (train/blockwise8.h) accepts are kept blockwise-quantised, the rest in
  // fp32; those named here stay fp32 whatever their size (embeddings:
  // embedding_weights).
  bool eight_bit = false;
  std::vector<std::string> fp32_moments;
};

class AdamW {
 public:
  // Elements of a parameter updated together under "8bit" (512 blocks), and
  // the bytes each takes while they step, beside the 8-bit state: its fp32
  // moments (8) and the quantisation's indices and distances (30 at most).
  static constexpr int64_t kStepElements = 512 * kQuantBlock;
  static constexpr int64_t kStepBytesPerElement = 40;

  // Whether weight decay applies to a parameter; asked once per parameter at
  // construction (the trainer's rule: dim >= 2 and not an embedding the task names).
  using DecayRule = std::function<bool(const std::string& name, const at::Tensor& param)>;

  // The tensors are shared with the model and updated in place, in their own
  // dtype (fp32 master weights). Names must be unique. With `shards` (built
  // over the same parameters, and outliving this), ZeRO-1: the optimizer
  // keeps moments of the rank's runs of each parameter alone, and step() and
  // state() are collectives that every rank calls.
  //
  // `masters` (train.master_weights = "sharded"), parallel to `params`: where
  // defined, the parameter is a half-precision working copy and this its fp32
  // value (to_working_precision). The optimizer keeps an fp32 master of the
  // rank's runs of it, initialised from it, updates the master and writes it
  // rounded into the parameter's runs before the all-gather. Masters need
  // `shards` that hold the gradients (fp32 blocks; one rank's shards are the
  // whole tensors): their updates read the gradients there.
  AdamW(NamedTensors params, AdamWOptions options, DecayRule decay, const ParamShards* shards = nullptr,
        const std::vector<at::Tensor>& masters = {});

  // One update with learning rate `lr`. A parameter without a gradient is left
  // alone and its step count does not advance, as in torch. A parameter of
  // 8-bit moments is updated kStepElements at a time: its moments'
  // blocks dequantised to fp32, the fused update, requantised, so that
  // beside the 8-bit state no more than kStepBytesPerElement x kStepElements
  // (40 MiB) exist at once. Sharded, each
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
  // parameter, in parameter order; a moment kept in 8 bits is there as it is
  // kept, "<name>.exp_avg.codes" (uint8, the parameter's elements in memory
  // order) and "<name>.exp_avg.absmax" (fp32, one per block), and so for
  // exp_avg_sq. The moments are shared, not copied (they are
  // twice the model's size): write them out before the next step. Sharded,
  // the whole moments are gathered into rank 0's host memory, one group of
  // parameters at a time (ParamShards::gather); other ranks get an empty set.
  NamedTensors state() const;

  // Copies `state` (whole tensors, as state() gives them on any world size or
  // sharding) in, converting dtype and device, a tensor at a time; sharded,
  // only the rank's runs of it, reading from a checkpoint file only the rows
  // they span. A parameter's moments may be in either form, whatever this
  // optimizer keeps: fp32 ones are quantised, 8-bit ones dequantised. On any
  // missing, unexpected or misshapen entry nothing is changed and a
  // UsageError lists them. Returns how many parameters' moments were
  // converted so.
  int64_t load_state(const TensorSource& state);
  int64_t load_state(const NamedTensors& state);

  // The fp32 masters as whole tensors, shaped and laid out as their
  // parameters, in host memory on rank 0 (gathered as state() gathers),
  // parallel to params(), undefined for a parameter without one; other ranks
  // get an empty vector. A collective.
  std::vector<at::Tensor> masters(bool average = false) const;
  // The masters from fp32 (or any) weights as a checkpoint's "model" set
  // holds them, under the parameters' names: each rank reads its runs. The
  // parameters themselves are the caller's to restore (rounded).
  void load_masters(const TensorSource& weights, bool average = false);
  bool has_masters() const { return has_masters_; }
  // Bytes this rank keeps between steps: moments (codes and scales under
  // "8bit") and masters' slices; the masters' average is the EMA's.
  int64_t state_bytes() const;
  bool has_master(size_t i) const { return slots_.at(i).master.defined(); }

  // An exponential moving average of the masters (train.ema_decay under
  // sharded masters; train/ema.h keeps the other parameters'): each rank
  // averages its slices, as it updates them, in fp32. start_average() starts
  // it at the masters; update_average() moves it by one step's decay.
  // masters(true) and load_masters(..., true) gather and load it as the
  // masters, and write_masters(true) puts it, rounded, into the parameters.
  void start_average();
  void update_average(double decay);
  bool has_average() const { return has_average_; }
  // The masters (or their average) rounded into every rank's parameters:
  // each rank's runs, then the all-gather. A collective.
  void write_masters(bool average) const;

  const NamedTensors& params() const { return params_; }
  const AdamWOptions& options() const { return options_; }
  bool decays(size_t index) const { return slots_.at(index).decay; }

 private:
  // The moments are the parameter's shape, or sharded its runs end to end;
  // in 8 bits, `exp_avg` and `exp_avg_sq` are undefined and q_avg, q_avg_sq
  // hold them.
  struct Slot {
    at::Tensor master;  // fp32, the runs end to end; undefined for an fp32 parameter
    at::Tensor average;  // the master's average, laid out as it (start_average)
    at::Tensor exp_avg;
    at::Tensor exp_avg_sq;
    QuantizedMoment q_avg, q_avg_sq;
    int64_t step = 0;
    bool decay = false;
    bool quantized() const { return q_avg.codes.defined(); }
  };
  // Parameter i's update in groups of kStepElements (8-bit moments).
  void step_quantized(size_t i, int64_t step, double lr);
  // The runs of parameter i this rank keeps moments of: sharded, those it
  // owns; otherwise the whole tensor as one.
  std::vector<ElementRun> runs_of(size_t i) const;
  // The checks of load_state for parameter i: what it misses, or holds
  // misshapen; whether the state has its moments in 8 bits.
  bool check_entry(size_t i, const TensorSource& state, std::set<std::string>& given,
                   std::vector<std::string>& missing, std::vector<std::string>& misshapen) const;
  // Parameter i's `moment` from a checkpoint's 8-bit form under `key`
  // (".codes", ".absmax"), or its fp32 form quantised.
  void load_quantized(size_t i, QuantizedMoment& moment, const TensorSource& state, const std::string& key,
                      bool stored_quantized) const;
  const at::Tensor& map_of(const QuantizedMoment& moment) const { return moment.is_signed ? signed_map_ : unsigned_map_; }
  // The (parameter, gradient, exp_avg, exp_avg_sq) views of parameter i that
  // its update walks: the whole tensors, or sharded one per owned run.
  void add_views(size_t i, std::vector<at::Tensor> (&lists)[4]) const;
  // Parameter i's fp32 `moment` from the whole tensor a checkpoint holds
  // under `key`, or from its 8-bit form (with the signed map or not).
  void load_moment(size_t i, at::Tensor& moment, const TensorSource& state, const std::string& key,
                   bool stored_quantized, bool is_signed) const;

  // What the update writes for parameter i, in memory order: its fp32
  // master's runs end to end, or the parameter itself.
  at::Tensor updated(size_t i) const;
  // After parameter i's master was updated: its runs (or the average's)
  // rounded into the parameter.
  void write_back(size_t i, bool average = false) const;

  NamedTensors params_;
  AdamWOptions options_;
  bool has_masters_ = false;
  bool has_average_ = false;
  const ParamShards* shards_;
  std::vector<Slot> slots_;  // parallel to params_
  at::Tensor signed_map_, unsigned_map_;  // dynamic_map, on the parameters' device
};

}  // namespace tandem
