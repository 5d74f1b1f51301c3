#include "app/sample_judge.h"

#include <torch/torch.h>

#include <algorithm>

#include "app/commands.h"
#include "app/distance_report.h"
#include "app/pipeline.h"
#include "app/sample_keys.h"
#include "data/load_image.h"
#include "tandem/data/eval_shard.h"
#include "tandem/dist/gather_in_order.h"
#include "tandem/dist/world.h"
#include "tandem/error.h"
#include "tandem/train/autocast_guard.h"
#include "tandem/train/classification.h"

namespace vavae {

SampleJudge::SampleJudge(const tandem::Config& config, const LatentSet& latents, std::optional<FidInception> inception,
                         std::vector<ImageItem> real)
    : config_(config),
      latents_(latents),
      vae_(latents_vae(config, latents, latent_file(config, "train"))),
      inception_(std::move(inception)),
      real_(std::move(real)) {
  const SampleKeys keys = tandem::read_keys<SampleKeys>(config);
  generate_.sampler = sampler_options(keys, latents.num_users);
  generate_.seed = static_cast<uint64_t>(keys.seed);
  per_user_ = tandem::read_keys<EvaluateKeys>(config).samples_per_user;
  batch_ = keys.batch;
  image_size_ = latents.image_size;
  const std::vector<std::string> names = metric_names();
  const std::string best = tandem::read_keys<DitKeys>(config).best_metric;
  if (best != "eval_loss" && std::find(names.begin(), names.end(), best.substr(5)) == names.end())
    throw tandem::UsageError("dit.best_metric = \"" + best + "\": " + std::to_string(latents.num_users * per_user_) +
                             " generated images (eval.samples_per_user x " + std::to_string(latents.num_users) +
                             " users) and " + std::to_string(real_.size()) +
                             " real cannot give it (FID needs more than 2048 a side, precision and recall 4, KID 2)");
}

std::vector<std::string> SampleJudge::metric_names() const {
  std::vector<std::string> names = {"conditional_accuracy"};
  if (!inception_) return names;
  const std::vector<std::string> figures = supported_figures(
      static_cast<int64_t>(real_.size()), latents_.num_users * per_user_, FidInceptionImpl::kFeatures);
  names.insert(names.end(), figures.begin(), figures.end());
  return names;
}

tandem::Metrics SampleJudge::operator()(torch::nn::Module& model, const tandem::EvalContext& ctx) {
  tandem::World& world = *ctx.world;
  auto& dit = dynamic_cast<DitImpl&>(model);
  const bool was_training = dit.is_training();
  dit.eval();
  vae_.vae->to(ctx.device);
  judge_->to(ctx.device);
  if (inception_) (*inception_)->to(ctx.device);
  generate_.precision = ctx.precision;
  const int64_t n = latents_.num_users * per_user_;
  const tandem::EvalShard shard = tandem::eval_shard(n, world.size(), world.rank());
  std::vector<at::Tensor> predictions, features;
  for (const tandem::MicroBatch& part : shard.micro_batches(batch_)) {
    std::vector<ImageRequest> requests;
    for (const int64_t i : part.indices) requests.push_back({i / per_user_ + 1, i % per_user_});
    const at::Tensor images = as_eight_bit(generate_images(dit, *vae_.vae, latents_, requests, generate_));
    torch::NoGradGuard no_grad;
    {
      tandem::AutocastGuard autocast(ctx.precision, ctx.device.is_cuda());
      predictions.push_back(tandem::resnet_logits(*judge_, images).argmax(1).cpu());
    }
    // Inception in fp32, as image_features computes the real images'.
    if (inception_)
      for (const at::Tensor& chunk : images.split(kFeatureBatch))
        features.push_back((*inception_)->forward(to_unit_range(chunk)).to(at::kFloat).cpu());
  }
  dit.train(was_training);
  const at::Tensor predicted = tandem::gather_in_order(world, n, torch::cat(predictions));
  const at::Tensor users = torch::arange(n, torch::kLong).div(per_user_, "floor");
  tandem::Metrics out = {{"conditional_accuracy", predicted.eq(users).to(at::kDouble).mean().item<double>()}};
  if (!inception_) return out;
  if (!reference_) {
    const std::string cache = real_features_file(config_);
    reference_ = real_reference(cached_image_features(*inception_, real_, image_size_, ctx, cache,
                                                      tandem::read_keys<EvaluateKeys>(config_).inception_weights)
                                    .features);
  }
  const at::Tensor generated = tandem::gather_in_order(world, n, torch::cat(features));
  const DistanceFigures figures = distance_figures(*reference_, generated, kKidSubsetSize);
  for (const auto& [name, value] : figures.scalars())
    if (name != "kid_std") out[name] = value;
  return out;
}

}  // namespace vavae
