#pragma once
// An exponential moving average of a model's weights, kept beside the model
// for sampling and evaluation (a DiT samples better from its EMA than from its
// last step). Keyed by name, so it goes into a checkpoint as its own set
// ("ema/") and comes back into a freshly built model.
#include <torch/nn/module.h>

#include <string>
#include <unordered_set>
#include <vector>

#include "tandem/named_tensors.h"

namespace tandem {

class Ema {
 public:
  // Starts as a copy of the module's trained state (checkpoint.h: the
  // parameters that require gradients, and the buffers), on their devices:
  // build it once the model is where it will train. Frozen parameters are
  // left out: they never change, and a LoRA run's frozen base is most of the
  // model. So are the parameters named in `elsewhere`, whose average another
  // part keeps: under train.master_weights = "sharded" the half-precision
  // working weights, averaged as their masters' slices (AdamW::update_average).
  explicit Ema(const torch::nn::Module& module, const std::vector<std::string>& elsewhere = {});

  // ema = decay * ema + (1 - decay) * param for every parameter, without
  // recording gradients; buffers (fixed tables, running statistics) are copied,
  // since averaging them means nothing. `module` must have the names the Ema
  // was built from, on the same devices; throws std::invalid_argument otherwise,
  // and for a decay outside [0, 1].
  void update(const torch::nn::Module& module, double decay);

  // Trained parameters, then buffers, in the module's order, under the
  // module's names.
  // The tensors are the Ema's own, shared: write them into a checkpoint, or
  // restore() a checkpoint's set into them.
  const NamedTensors& named_tensors() const { return tensors_; }

  // Overwrites the module's trained parameters and buffers with the averages
  // (as for sampling); the same name check as update().
  void copy_to(torch::nn::Module& module) const;

 private:
  // The module's trained state less `elsewhere_`.
  NamedTensors averaged(const torch::nn::Module& module) const;

  std::unordered_set<std::string> elsewhere_;  // asked for every tensor, every step
  NamedTensors tensors_;
  size_t num_parameters_ = 0;  // the first entries of tensors_
};

}  // namespace tandem
