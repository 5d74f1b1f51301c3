#include "tandem/train/task.h"

#include <torch/torch.h>

#include <stdexcept>

namespace tandem {

Batch make_loop_batch(Task& task, const MicroBatch& micro_batch, bool train, uint64_t seed) {
  if (micro_batch.sequence.empty()) {
    Batch batch = task.make_batch(micro_batch.indices, train, seed);
    batch["valid"] = valid_mask(micro_batch.valid);
    task.complete_batch(batch);
    return batch;
  }
  Batch batch = task.make_packed_batch(micro_batch, train, seed);
  // A sequence is padding when its samples are: the sampler packs valid
  // samples only, and gives a rank with none one invalid sample alone.
  std::vector<uint8_t> valid(static_cast<size_t>(micro_batch.sequence.back() + 1), 0);
  for (size_t k = 0; k < micro_batch.indices.size(); ++k)
    valid[static_cast<size_t>(micro_batch.sequence[k])] |= micro_batch.valid[k];
  batch["valid"] = valid_mask(valid);
  task.complete_batch(batch);
  return batch;
}

Batch Task::make_packed_batch(const MicroBatch&, bool, uint64_t) {
  throw std::logic_error("this task does not pack samples into sequences");
}

Loss Loss::of_mean(const at::Tensor& mean, int64_t count) {
  return {mean * static_cast<double>(count),
          torch::full({}, static_cast<double>(count), mean.options().dtype(torch::kFloat))};
}

at::Tensor Loss::mean() const { return sum / weight.to(sum.dtype()).clamp_min(1e-30); }

EvalRows Task::eval_rows(torch::nn::Module& model, const Batch& batch) {
  const at::Tensor valid = batch.at("valid").to(torch::kDouble);
  const at::Tensor share = valid / valid.sum().clamp_min(1);
  const Loss l = loss(model, batch);
  return {{"loss_sum", l.sum.detach().to(torch::kDouble) * share},
          {"loss_weight", l.weight.detach().to(torch::kDouble) * share}};
}

Metrics Task::eval_metrics(const EvalRows& rows) {
  if (!rows.count("loss_weight")) return {{"loss", rows.at("loss").to(torch::kDouble).mean().item<double>()}};
  const double weight = rows.at("loss_weight").sum().item<double>();
  return {{"loss", weight > 0 ? rows.at("loss_sum").sum().item<double>() / weight : 0.0}};
}

Metrics Task::collective_metrics(torch::nn::Module&, const EvalContext&) { return {}; }

std::vector<std::string> Task::metric_names() const { return {"loss"}; }

std::string Task::metric_mode(const std::string& name) const { return name == "loss" ? "min" : ""; }

bool Task::decays(const std::string&, const at::Tensor& param) const { return param.dim() >= 2; }

}  // namespace tandem
