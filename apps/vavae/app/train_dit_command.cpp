#include <torch/torch.h>

#include <memory>
#include <optional>

#include "app/commands.h"
#include "app/dit_for_latents.h"
#include "app/dit_task.h"
#include "app/judge.h"
#include "app/latent_file.h"
#include "app/pipeline.h"
#include "app/sample_judge.h"
#include "data/user_folders.h"
#include "tandem/config/config.h"
#include "tandem/config/settings.h"
#include "tandem/dist/world.h"
#include "tandem/error.h"
#include "tandem/obs/log.h"
#include "tandem/train/trainer.h"

namespace vavae {

namespace {

// The Inception network of eval.inception_weights when the evaluations
// sample (dit.best_metric other than eval_loss), read at the door; a metric
// of features without it is refused.
std::optional<FidInception> best_metric_inception(const tandem::Config& config, const std::string& best) {
  if (best == "eval_loss") return std::nullopt;
  const std::string weights = tandem::read_keys<EvaluateKeys>(config).inception_weights;
  if (weights.empty() && best == "eval_conditional_accuracy") return std::nullopt;
  if (weights.empty())
    throw tandem::UsageError("dit.best_metric = \"" + best +
                             "\" compares Inception features: set eval.inception_weights (docs/vavae.md)");
  return load_fid_inception(weights, "eval.inception_weights");
}

// evaluate's judge, trained on the real images for train-dit's evaluations
// by sampling (a finished run returns at once). The trainer's status.
int train_judge_for(tandem::World& world, const tandem::Config& config, SampleJudge& judged, int64_t num_users) {
  const DataKeys data = tandem::read_keys<DataKeys>(config);
  const auto [images, val_images] = scan_train_val(data);
  const tandem::nn::ResNetOptions model = judge_model(config, num_users, data.image_size);
  ClassifierTask task(model, data.image_size, data.hflip, images.items, val_images.items);
  if (world.is_main())
    tandem::log::info("train-dit: evaluations sample ", tandem::read_keys<EvaluateKeys>(config).samples_per_user,
                      " images a user and judge them; first evaluate's judge learns the real images");
  const JudgeRun run = train_judge(world, config, task);
  if (run.status == tandem::kExitOk) judged.set_judge(load_judge(run.model_file, model));
  return run.status;
}

}  // namespace

int run_train_dit(tandem::World& world, const tandem::Config& config) {
  const DitKeys keys = tandem::read_keys<DitKeys>(config);
  std::optional<FidInception> inception = best_metric_inception(config, keys.best_metric);
  const LatentSet train = read_latents(latent_file(config, "train"));
  const LatentSet val = read_latents(latent_file(config, "val"));
  if (val.vae_hash != train.vae_hash || val.latents.sizes().slice(1) != train.latents.sizes().slice(1))
    throw tandem::UsageError(latent_file(config, "val") + " and " + latent_file(config, "train") +
                             " come from different VAEs: run extract again");
  DitTaskOptions options;
  options.dit = dit_options(keys, train);
  options.timesteps = parse_timestep_sampling(keys.timestep_sampling, "dit.timestep_sampling");
  options.cosine_weight = keys.cosine_weight;
  const tandem::TrainKeys stage = dit_settings(config);
  const std::string& run_dir = stage.out_dir;
  if (world.is_main())
    tandem::log::info("train-dit: ", train.latents.size(0), " training and ", val.latents.size(0),
                      " validation latents ", train.latents.sizes().slice(1), " of ", train.num_users, " users; DiT ",
                      keys.preset, " patch ", options.dit.patch_size, "; run folder ", run_dir);
  DitTask task(options, normalise(train.latents, train).contiguous(), (train.user_ids - 1).contiguous(),
               normalise(val.latents, train).contiguous(), (val.user_ids - 1).contiguous());
  std::shared_ptr<SampleJudge> judged;
  if (keys.best_metric != "eval_loss") {
    judged = std::make_shared<SampleJudge>(config, train, std::move(inception),
                                           scan_train_val(tandem::read_keys<DataKeys>(config)).train.items);
    task.measure_samples(
        [judged](torch::nn::Module& dit, const tandem::EvalContext& ctx) { return (*judged)(dit, ctx); },
        judged->metric_names());
  }
  // The DiT's settings are checked here, before the judge trains.
  tandem::Trainer trainer(world, config, task, stage);
  if (judged)
    if (const int status = train_judge_for(world, config, *judged, train.num_users); status != tandem::kExitOk)
      return status;
  return trainer.run();
}

}  // namespace vavae
