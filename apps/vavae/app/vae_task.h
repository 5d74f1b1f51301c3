#pragma once
// train-vae's part of the shared training loop: images in [-1, 1] in, the
// VAE's reconstruction out; L1 + KL to learn from (vae_loss), plus VA-VAE's
// alignment with foundation features when they are given (the VF loss,
// weighted adaptively against the reconstruction); the mean L1 per pixel on
// validation to judge by. The posterior's noise is drawn in
// make_batch from the sample's own stream (data/sample_seed.h), so a sample
// gets the same noise on any number of ranks.
#include <cstdint>
#include <string>
#include <vector>

#include "data/user_folders.h"
#include "model/vae.h"
#include "model/vae_loss.h"
#include "tandem/train/task.h"

namespace vavae {

struct VaeTaskOptions {
  VaeOptions vae;
  std::string init_from;  // a safetensors file with the upstream names; "" for random weights
  int64_t image_size = 256;
  bool hflip = false;
  double kl_weight = 1e-6;
  // [N, C, h, w] for the training images in order (data/vf_features.h), or
  // undefined: a plain KL-VAE. Flipped with their image.
  at::Tensor vf_features;
  // Upstream's vf_weight: the VF term's weight on top of the adaptive one.
  double vf_weight = 0.1;
};

// The training loss of one batch: vae_loss's total, plus
// vf_weight * adaptive_weight * (cosine-margin + distance-matrix VF losses)
// when `features` is defined (then `vae` must be a VfVaeImpl). `weigh`
// carries the adaptive weight from step to step (the last finite one); null
// gives each call a fresh one.
at::Tensor vae_training_loss(VaeImpl& vae, const at::Tensor& images, const at::Tensor& noise,
                             const at::Tensor& features, const VaeTaskOptions& options,
                             AdaptiveWeight* weigh = nullptr);

// VaeTask::activation_bytes for a VAE on images of `image_size` pixels,
// aligned with features of `vf_channels` (0: none); also the plan command's.
tandem::Activations vae_activation_bytes(const VaeOptions& vae, int64_t image_size, int64_t vf_channels,
                                         const tandem::ActivationQuery& query);

class VaeTask : public tandem::Task {
 public:
  VaeTask(VaeTaskOptions options, std::vector<ImageItem> train, std::vector<ImageItem> val);

  std::shared_ptr<torch::nn::Module> build_model() override;
  bool fixed_shapes() const override { return true; }  // images of one size
  // VaeOptions::activation_bytes, and under VF alignment the projected
  // latents and the distance matrices' [hw, hw] similarities (estimated from
  // the code, not measured).
  tandem::Activations activation_bytes(const tandem::ActivationQuery& query) const override;
  std::vector<std::string> fp32_weights(torch::nn::Module& model) const override { return vavae::fp32_weights(model); }
  int64_t train_size() const override { return static_cast<int64_t>(train_.size()); }
  int64_t eval_size() const override { return static_cast<int64_t>(val_.size()); }
  tandem::Batch make_batch(const std::vector<int64_t>& indices, bool train, uint64_t seed) override;
  tandem::Loss loss(torch::nn::Module& model, const tandem::Batch& batch) override;
  // "loss" (the training loss of each sample) and "l1" (its mean |x - x_rec|).
  tandem::EvalRows eval_rows(torch::nn::Module& model, const tandem::Batch& batch) override;
  tandem::Metrics eval_metrics(const tandem::EvalRows& rows) override;
  std::vector<std::string> metric_names() const override;
  std::string metric_mode(const std::string&) const override { return "min"; }  // loss and l1

 private:
  VaeTaskOptions options_;
  std::vector<ImageItem> train_, val_;
  AdaptiveWeight vf_weigh_;
};

}  // namespace vavae
