#pragma once
// train-dit's evaluations by sampling, for a dit.best_metric other than
// eval_loss: at every evaluation, eval.samples_per_user images of every user
// from the weights being judged (the EMA's, where kept), made as sample makes
// them (app/generate.h, sample.* settings, sample.seed: the same images'
// noise each time, so evaluations compare) and rounded to 8 bits as the
// files would be, each rank making an equal share. They are judged by
// evaluate's classifier ("conditional_accuracy", the share recognised as
// their user) and, with eval.inception_weights, compared with the real
// training images' Inception features (app/distance_report.h: "kid_mean",
// "precision", "recall", and "fid" where more than 2048 images a side allow
// it). Every rank gets the same figures.
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "app/distance_report.h"
#include "app/generate.h"
#include "app/image_features.h"
#include "app/latent_file.h"
#include "app/vae_source.h"
#include "data/user_folders.h"
#include "metrics/fid_inception.h"
#include "tandem/config/config.h"
#include "tandem/nn/resnet.h"
#include "tandem/train/task.h"

namespace vavae {

class SampleJudge {
 public:
  // `latents`: train.h5 (statistics, shape, users, the VAE, checked against
  // the latents here); `inception` with the real training images `real`, or
  // none. Throws UsageError when dit.best_metric names a figure the counts
  // cannot give (eval_fid with 2048 images a side or fewer ...).
  SampleJudge(const tandem::Config& config, const LatentSet& latents, std::optional<FidInception> inception,
              std::vector<ImageItem> real);
  // evaluate's classifier, before the first evaluation.
  void set_judge(tandem::nn::ResNet judge) { judge_ = std::move(judge); }

  // The metrics each evaluation gives, known before training (Task::metric_names).
  std::vector<std::string> metric_names() const;
  // A collective: every rank calls it with the DiT being judged.
  tandem::Metrics operator()(torch::nn::Module& dit, const tandem::EvalContext& ctx);

 private:
  const tandem::Config& config_;
  const LatentSet& latents_;
  LoadedVae vae_;
  tandem::nn::ResNet judge_{nullptr};
  std::optional<FidInception> inception_;
  std::vector<ImageItem> real_;
  std::optional<RealReference> reference_;  // the real images', at the first evaluation
  GenerateOptions generate_;
  int64_t per_user_, batch_, image_size_;
};

}  // namespace vavae
