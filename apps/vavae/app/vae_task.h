#pragma once
// train-vae's part of the shared training loop: images in [-1, 1] in, the
// VAE's reconstruction out; L1 + KL to learn from (vae_loss), the mean L1
// per pixel on validation to judge by. The posterior's noise is drawn in
// make_batch from the sample's own stream (data/sample_seed.h), so a sample
// gets the same noise on any number of ranks.
#include <cstdint>
#include <string>
#include <vector>

#include "data/user_folders.h"
#include "model/vae.h"
#include "tandem/train/task.h"

namespace vavae {

struct VaeTaskOptions {
  VaeOptions vae;
  std::string init_from;  // a safetensors file with the upstream names; "" for random weights
  int64_t image_size = 256;
  bool hflip = false;
  double kl_weight = 1e-6;
};

class VaeTask : public tandem::Task {
 public:
  VaeTask(VaeTaskOptions options, std::vector<ImageItem> train, std::vector<ImageItem> val);

  std::shared_ptr<torch::nn::Module> build_model() override;
  int64_t train_size() const override { return static_cast<int64_t>(train_.size()); }
  int64_t eval_size() const override { return static_cast<int64_t>(val_.size()); }
  tandem::Batch make_batch(const std::vector<int64_t>& indices, bool train, uint64_t seed) override;
  at::Tensor loss(torch::nn::Module& model, const tandem::Batch& batch) override;
  // "loss" (the training loss of each sample) and "l1" (its mean |x - x_rec|).
  tandem::EvalRows eval_rows(torch::nn::Module& model, const tandem::Batch& batch) override;
  tandem::Metrics eval_metrics(const tandem::EvalRows& rows) override;

 private:
  VaeTaskOptions options_;
  std::vector<ImageItem> train_, val_;
};

}  // namespace vavae
