#include <torch/torch.h>

#include <filesystem>

#include "app/commands.h"
#include "app/pipeline.h"
#include "app/vae_source.h"
#include "app/vae_task.h"
#include "data/user_folders.h"
#include "data/vf_features.h"
#include "tandem/config/config.h"
#include "tandem/dist/world.h"
#include "tandem/error.h"
#include "tandem/io/safetensors.h"
#include "tandem/obs/log.h"
#include "tandem/train/trainer.h"

namespace vavae {
namespace fs = std::filesystem;

int run_train_vae(tandem::World& world, const tandem::Config& config) {
  const VaeKeys vae = tandem::read_keys<VaeKeys>(config);
  const DataKeys data = tandem::read_keys<DataKeys>(config);
  VaeTaskOptions options;
  options.vae = VaeOptions::preset(vae.preset);
  options.init_from = init_from_file(config);
  options.image_size = data.image_size;
  options.hflip = data.hflip;
  options.kl_weight = vae.kl_weight;
  const int64_t f = options.vae.downsample_factor();
  if (options.image_size < f || options.image_size % f != 0)
    throw tandem::UsageError("data.image_size " + std::to_string(options.image_size) + " must be a multiple of " +
                             std::to_string(f) + ", the downsampling of vae.preset " + vae.preset);
  const auto [train, val] = scan_train_val(data);
  if (!vae.vf_features.empty())
    options.vf_features =
        read_vf_features(vae.vf_features, "vae.vf_features", train.items, data.root, options.image_size / f);
  options.vf_weight = vae.vf_weight;
  const tandem::TrainKeys stage = vae_settings(config);
  const std::string& run_dir = stage.out_dir;
  if (world.is_main())
    tandem::log::info("train-vae: ", train.items.size(), " training and ", val.items.size(), " validation images of ",
                      train.num_users, " users at ", options.image_size, " pixels, preset ", vae.preset,
                      options.vf_features.defined() ? ", aligned with " + std::to_string(options.vf_features.size(1)) +
                                                          "-channel features of " + vae.vf_features
                                                    : std::string(", no VF features (a KL-VAE)"),
                      "; run folder ", run_dir);

  VaeTask task(options, train.items, val.items);
  tandem::Trainer trainer(world, config, task, stage);
  const int status = trainer.run();
  if (status != tandem::kExitOk) return status;
  if (world.is_main()) {
    // The export holds the model validation picked, under the upstream names.
    const LoadedVae best = load_vae(tandem::trained_model(run_dir), vae.preset);
    const std::string file = (fs::path(run_dir) / "vae.safetensors").string();
    tandem::write_safetensors(file, tandem::named_tensors(best.vae->named_parameters()),
                              {{"preset", best.preset}, {"weights_hash", best.hash}});
    tandem::log::info("train-vae: ", best.path, " exported to ", file);
  }
  world.setup_barrier("rank 0 to export the VAE");
  return status;
}

}  // namespace vavae
