#pragma once
// The memory plan against measurement, for the tests of each model's
// activation estimate and tests/bench/bench_memory_plan: the peak of the CPU
// tensors (obs/tensor_memory.h) over training steps (the first makes AdamW's
// moments) of a model built after counting starts, against the plan for it.
#include <torch/torch.h>

#include <functional>
#include <memory>

#include "tandem/nn/recompute.h"
#include "tandem/obs/tensor_memory.h"
#include "tandem/train/adamw.h"
#include "tandem/train/memory_plan.h"

namespace plan_accuracy {

struct Figures {
  tandem::MemoryPlan plan;
  double planned = 0, measured = 0;  // bytes: the plan's total, the peak
  double kept = 0;                   // bytes the last step's forward left alive
  double ratio() const { return planned / measured; }
};

// `loss` is a micro-batch's loss of the model `build` makes; `activations`
// the plan's estimate for it under `recompute`.
inline Figures figures(const std::function<std::shared_ptr<torch::nn::Module>()>& build,
                       const std::function<at::Tensor(torch::nn::Module&)>& loss,
                       const std::function<tandem::Activations(bool)>& activations, bool recompute,
                       int steps = 2) {
  const c10::Device cpu(c10::kCPU);
  tandem::count_cpu_tensors();
  torch::manual_seed(0);
  const int64_t before = tandem::tensor_memory(cpu).live;
  tandem::reset_tensor_peak(cpu);
  std::shared_ptr<torch::nn::Module> model = build();
  model->train();
  tandem::MemoryPlan plan = tandem::plan_model_memory(*model, {});
  plan.set_activations(activations(recompute));
  plan.recompute = recompute ? "blocks" : "none";
  tandem::NamedTensors params;
  for (const auto& p : model->named_parameters()) params.emplace_back(p.key(), p.value());
  tandem::AdamW optimizer(params, {}, [](const std::string&, const at::Tensor&) { return true; });
  int64_t kept = 0;
  for (int step = 0; step < steps; ++step) {
    tandem::nn::RecomputeScope scope(recompute);
    const int64_t start = tandem::tensor_memory(cpu).live;
    const at::Tensor l = loss(*model);
    kept = tandem::tensor_memory(cpu).live - start;
    l.backward();
    optimizer.step(1e-4);
    optimizer.zero_grad();
  }
  return {plan, static_cast<double>(plan.total()), static_cast<double>(tandem::tensor_memory(cpu).peak - before),
          static_cast<double>(kept)};
}

}  // namespace plan_accuracy
