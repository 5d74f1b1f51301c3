#include "app/dit_task.h"

#include <torch/torch.h>

#include "data/sample_seed.h"

namespace vavae {

DitTask::DitTask(DitTaskOptions options, at::Tensor train_latents, at::Tensor train_labels, at::Tensor val_latents,
                 at::Tensor val_labels)
    : options_(std::move(options)),
      train_x_(std::move(train_latents)),
      train_y_(std::move(train_labels)),
      val_x_(std::move(val_latents)),
      val_y_(std::move(val_labels)) {}

std::shared_ptr<torch::nn::Module> DitTask::build_model() { return Dit(options_.dit).ptr(); }

tandem::Batch DitTask::make_batch(const std::vector<int64_t>& indices, bool train, uint64_t seed) {
  const at::Tensor& x = train ? train_x_ : val_x_;
  const at::Tensor& y = train ? train_y_ : val_y_;
  const int64_t n = static_cast<int64_t>(indices.size());
  const auto shape = x.sizes().slice(1).vec();
  std::vector<at::Tensor> noise(n), t(n);
  std::vector<int64_t> labels(n);
  for (int64_t k = 0; k < n; ++k) {
    at::Generator g = sample_generator(seed, static_cast<uint64_t>(indices[k]));
    noise[k] = at::randn(shape, g);
    t[k] = sample_timesteps(1, options_.timesteps, g, at::kCPU);
    labels[k] = y[indices[k]].item<int64_t>();
    // Dropped to the null class only in training: validation measures the
    // conditional model, the one guidance leans on.
    if (train && at::rand({1}, g).item<double>() < options_.dit.class_dropout_prob)
      labels[k] = options_.dit.num_classes;
  }
  const at::Tensor index = torch::tensor(indices, torch::kLong);
  return {{"x1", x.index_select(0, index)},
          {"x0", torch::stack(noise)},
          {"t", torch::cat(t)},
          {"y", torch::tensor(labels, torch::kLong)}};
}

// A mean over the batch's samples, all valid (drop_last), of equal weight.
tandem::Loss DitTask::loss(torch::nn::Module& model, const tandem::Batch& batch) {
  auto& dit = dynamic_cast<DitImpl&>(model);
  const FlowPair pair = make_flow_pair(batch.at("x1"), batch.at("x0"), batch.at("t"));
  const at::Tensor predicted = dit.forward(pair.x_t, pair.t, batch.at("y"));
  return tandem::Loss::of_mean(flow_loss(predicted, pair.velocity, options_.cosine_weight).total, predicted.size(0));
}

tandem::EvalRows DitTask::eval_rows(torch::nn::Module& model, const tandem::Batch& batch) {
  auto& dit = dynamic_cast<DitImpl&>(model);
  const FlowPair pair = make_flow_pair(batch.at("x1"), batch.at("x0"), batch.at("t"));
  const at::Tensor predicted = dit.forward(pair.x_t, pair.t, batch.at("y")).to(at::kFloat);
  return {{"loss", (predicted - pair.velocity).pow(2).flatten(1).mean(1)}};
}

double DitTask::flops_in(const tandem::Batch& batch) const {
  // Per sample: 6 x parameters x tokens (forward + backward of the matmuls),
  // plus the attention scores: 12 x depth x tokens^2 x hidden (every token
  // attends to every other).
  const DitOptions& o = options_.dit;
  const double tokens = static_cast<double>(o.grid_size() * o.grid_size());
  const double hidden = static_cast<double>(o.hidden_size);
  const double per_block = 4 * hidden * hidden + 3 * hidden * static_cast<double>(o.mlp_hidden());
  const double per_sample = 6 * tokens * per_block * static_cast<double>(o.depth) +
                            12 * static_cast<double>(o.depth) * tokens * tokens * hidden;
  return per_sample * batch.at("valid").sum().item<double>();
}

std::string dit_metric_mode(const std::string& name) {
  return name == "loss" || name == "fid" || name == "kid_mean" ? "min" : "max";
}

void DitTask::measure_samples(SampleMetrics metrics, std::vector<std::string> names) {
  sample_metrics_ = std::move(metrics);
  sample_names_ = std::move(names);
}

tandem::Metrics DitTask::collective_metrics(torch::nn::Module& model, const tandem::EvalContext& ctx) {
  return sample_metrics_ ? sample_metrics_(model, ctx) : tandem::Metrics{};
}

std::vector<std::string> DitTask::metric_names() const {
  std::vector<std::string> names = {"loss"};
  names.insert(names.end(), sample_names_.begin(), sample_names_.end());
  return names;
}

std::string DitTask::metric_mode(const std::string& name) const { return dit_metric_mode(name); }

}  // namespace vavae
