#pragma once
// train-dit's part of the shared training loop: normalised latents and
// labels in, the DiT's velocity out, the rectified-flow MSE to learn from
// and to validate by. Every draw (noise x0, timestep t, label dropout) is
// made in make_batch from the sample's own stream (data/sample_seed.h):
// off LibTorch's global generator, which the loader thread must not touch,
// the same on any number of ranks, and, for validation, whose seed is fixed,
// the same every epoch, so validation losses compare between epochs.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "flow/rectified_flow.h"
#include "model/dit.h"
#include "tandem/train/task.h"

namespace vavae {

struct DitTaskOptions {
  DitOptions dit;
  TimestepSampling timesteps = TimestepSampling::kLogNormal;
  double cosine_weight = 0.0;
};

// Which way a DiT evaluation's metric (without "eval_") is better: "min" for
// the loss, FID and KID, "max" for the rest (accuracy, precision, recall).
std::string dit_metric_mode(const std::string& name);

class DitTask : public tandem::Task {
 public:
  // Latents [N, C, h, w], already normalised; labels [N] int64 0-based.
  DitTask(DitTaskOptions options, at::Tensor train_latents, at::Tensor train_labels, at::Tensor val_latents,
          at::Tensor val_labels);

  std::shared_ptr<torch::nn::Module> build_model() override;
  tandem::Activations activation_bytes(const tandem::ActivationQuery& query) const override {
    return options_.dit.activation_bytes(query);
  }
  bool fixed_shapes() const override { return true; }  // images of one size
  int64_t train_size() const override { return train_x_.size(0); }
  int64_t eval_size() const override { return val_x_.defined() ? val_x_.size(0) : 0; }
  tandem::Batch make_batch(const std::vector<int64_t>& indices, bool train, uint64_t seed) override;
  tandem::Loss loss(torch::nn::Module& model, const tandem::Batch& batch) override;
  // "loss": each sample's mean squared velocity error.
  tandem::EvalRows eval_rows(torch::nn::Module& model, const tandem::Batch& batch) override;
  double flops_in(const tandem::Batch& batch) const override;

  // Metrics by sampling (app/sample_judge.h), given at every evaluation
  // besides the validation loss, named `names` (their way: dit_metric_mode).
  using SampleMetrics = std::function<tandem::Metrics(torch::nn::Module&, const tandem::EvalContext&)>;
  void measure_samples(SampleMetrics metrics, std::vector<std::string> names);
  tandem::Metrics collective_metrics(torch::nn::Module& model, const tandem::EvalContext& ctx) override;
  std::vector<std::string> metric_names() const override;
  std::string metric_mode(const std::string& name) const override;

 private:
  DitTaskOptions options_;
  at::Tensor train_x_, train_y_, val_x_, val_y_;
  SampleMetrics sample_metrics_;
  std::vector<std::string> sample_names_;
};

}  // namespace vavae
