#include "tandem/train/task.h"

#include <torch/torch.h>

namespace tandem {

Batch make_loop_batch(Task& task, const std::vector<int64_t>& indices, const std::vector<uint8_t>& valid, bool train,
                      uint64_t seed) {
  Batch batch = task.make_batch(indices, train, seed);
  batch["valid"] = valid_mask(valid);
  task.complete_batch(batch);
  return batch;
}

EvalRows Task::eval_rows(torch::nn::Module& model, const Batch& batch) {
  const auto n = batch.at("valid").size(0);
  return {{"loss", loss(model, batch).detach().to(torch::kFloat).cpu().expand({n}).contiguous()}};
}

Metrics Task::eval_metrics(const EvalRows& rows) {
  return {{"loss", rows.at("loss").to(torch::kDouble).mean().item<double>()}};
}

std::vector<std::string> Task::metric_names() const { return {"loss"}; }

bool Task::decays(const std::string&, const at::Tensor& param) const { return param.dim() >= 2; }

}  // namespace tandem
