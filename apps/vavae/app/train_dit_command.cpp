#include <torch/torch.h>

#include "app/commands.h"
#include "app/dit_for_latents.h"
#include "app/dit_task.h"
#include "app/latent_file.h"
#include "app/pipeline.h"
#include "tandem/config/config.h"
#include "tandem/config/settings.h"
#include "tandem/dist/world.h"
#include "tandem/error.h"
#include "tandem/obs/log.h"
#include "tandem/train/trainer.h"

namespace vavae {

int run_train_dit(tandem::World& world, const tandem::Config& config) {
  const LatentSet train = read_latents(latent_file(config, "train"));
  const LatentSet val = read_latents(latent_file(config, "val"));
  if (val.vae_hash != train.vae_hash || val.latents.sizes().slice(1) != train.latents.sizes().slice(1))
    throw tandem::UsageError(latent_file(config, "val") + " and " + latent_file(config, "train") +
                             " come from different VAEs: run extract again");
  const DitKeys keys = tandem::read_keys<DitKeys>(config);
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
  tandem::Trainer trainer(world, config, task, stage);
  return trainer.run();
}

}  // namespace vavae
