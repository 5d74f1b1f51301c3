#include <torch/torch.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <set>

#include "app/commands.h"
#include "app/dit_for_latents.h"
#include "app/generate.h"
#include "app/latent_file.h"
#include "app/pipeline.h"
#include "app/sample_keys.h"
#include "app/vae_source.h"
#include "data/load_image.h"
#include "flow/sampler.h"
#include "keys.h"
#include "tandem/config/checkpoint_config.h"
#include "tandem/config/config.h"
#include "tandem/dist/placement.h"
#include "tandem/dist/world.h"
#include "tandem/error.h"
#include "tandem/image/read_image.h"
#include "tandem/image/transform.h"
#include "tandem/image/write_png.h"
#include "tandem/io/checkpoint.h"
#include "tandem/obs/log.h"
#include "tandem/obs/tensorboard.h"
#include "tandem/train/inference_setup.h"
#include "tandem/train/trainer.h"

namespace vavae {
namespace fs = std::filesystem;
namespace log = tandem::log;
using tandem::UsageError;

namespace {

std::string dit_checkpoint(const tandem::Config& config, const SampleKeys& keys) {
  const std::string& given = keys.dit_checkpoint;
  if (!given.empty()) {
    if (!fs::is_regular_file(given)) throw UsageError("sample.dit_checkpoint: " + given + ": no such file");
    return given;
  }
  const std::string trained = tandem::trained_model(dit_run_dir(config));
  if (trained.empty())
    throw UsageError("no DiT: " + dit_run_dir(config) +
                     "/models holds no model (run train-dit first, or give --dit-checkpoint)");
  return trained;
}

// The DiT as trained, with its EMA weights where the run kept them: they
// sample better than the last step's. A model file holds them as its "model"
// set already; a checkpoint keeps them beside the live weights as "ema".
Dit load_dit(const std::string& path, const LatentSet& latents) {
  const tandem::Checkpoint ckpt = tandem::load_checkpoint(path);
  const tandem::Config trained = tandem::config_from_checkpoint(vavae_schema(), ckpt);
  const DitKeys keys = tandem::read_fields<DitKeys>(trained);
  Dit dit(dit_options(keys, latents));
  const std::string set = ckpt.sets.count("ema") ? "ema" : "model";
  tandem::restore(ckpt, set, tandem::module_state(*dit));
  log::info("sample: DiT ", path, " (", keys.preset, ", weights: ", set, ")");
  dit->eval();
  return dit;
}

std::vector<int64_t> chosen_users(const SampleKeys& keys, int64_t num_users) {
  std::vector<int64_t> users = keys.user_ids;
  if (users.empty())
    for (int64_t u = 1; u <= num_users; ++u) users.push_back(u);
  std::set<int64_t> seen;
  for (const int64_t u : users) {
    if (u > num_users)
      throw UsageError("sample.user_ids: user " + std::to_string(u) + " is out of range: the latents have users 1 to " +
                       std::to_string(num_users));
    // Two ranks would write the same file.
    if (!seen.insert(u).second) throw UsageError("sample.user_ids: user " + std::to_string(u) + " is given twice");
  }
  return users;
}

std::string image_name(int64_t user, int64_t index) {
  char name[64];
  std::snprintf(name, sizeof name, "user%02lld_%03lld.png", static_cast<long long>(user),
                static_cast<long long>(index));
  return name;
}

}  // namespace

int run_sample(tandem::World& world, const tandem::Config& config) {
  const SampleKeys keys = tandem::read_keys<SampleKeys>(config);
  const LatentSet latents = read_latents(latent_file(config, "train"));
  const std::vector<int64_t> users = chosen_users(keys, latents.num_users);
  const int64_t per_user = keys.num_samples_per_user;
  const int64_t batch = keys.batch;
  const std::string dit_path = dit_checkpoint(config, keys);
  LoadedVae vae = latents_vae(config, latents, latent_file(config, "train"));
  Dit dit = load_dit(dit_path, latents);
  const SamplerOptions options = sampler_options(keys, dit->null_class());
  // The DiT, which runs every sampler step, decides the precision.
  const tandem::InferenceSetup setup = tandem::inference_setup(world, config, /*fixed_shapes=*/true, dit_path);
  const c10::Device device = setup.device;
  dit->to(device);
  vae.vae->to(device);

  const std::string out = samples_dir(config);
  if (world.is_main()) fs::create_directories(out);
  world.barrier();
  // Image i of user u starts from the same noise on any number of ranks.
  std::vector<ImageRequest> mine;
  for (size_t k = 0; k < users.size() * per_user; ++k)
    if (static_cast<int>(k % world.size()) == world.rank())
      mine.push_back({users[k / per_user], static_cast<int64_t>(k % per_user)});
  GenerateOptions generate;
  generate.sampler = options;
  generate.seed = static_cast<uint64_t>(keys.seed);
  // The DiT and the decoder in the run's precision; the sampler integrates in fp32.
  generate.precision = setup.precision;
  const auto t0 = std::chrono::steady_clock::now();
  for (size_t begin = 0; begin < mine.size(); begin += batch) {
    const size_t end = std::min(mine.size(), begin + static_cast<size_t>(batch));
    const std::vector<ImageRequest> part(mine.begin() + static_cast<std::ptrdiff_t>(begin),
                                         mine.begin() + static_cast<std::ptrdiff_t>(end));
    const at::Tensor images = generate_images(*dit, *vae.vae, latents, part, generate).cpu();
    for (size_t k = 0; k < part.size(); ++k)
      tandem::image::write_png((fs::path(out) / image_name(part[k].user, part[k].index)).string(),
                               to_unit_range(images[static_cast<int64_t>(k)]));
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  world.barrier();
  if (world.is_main()) {
    std::vector<at::Tensor> tiles;
    for (const int64_t u : users)
      for (int64_t i = 0; i < per_user; ++i)
        tiles.push_back(tandem::image::read_image((fs::path(out) / image_name(u, i)).string(), 3));
    tandem::image::write_png((fs::path(out) / "grid.png").string(), tandem::image::image_grid(tiles, per_user));
    if (tandem::run_settings(config).tensorboard)
      tandem::TensorBoardWriter((fs::path(out) / "tb").string())
          .png_file("samples/grid", 0, (fs::path(out) / "grid.png").string());
    log::info("sample: ", users.size() * per_user, " images (", users.size(), " users x ", per_user, ") in ", seconds,
              " s on ", world.size(), " ranks, ", options.num_steps, " steps, guidance ", options.guidance_scale, " (",
              static_cast<double>(mine.size()) / std::max(seconds, 1e-9), " images/s per rank) -> ", out,
              "/user{UU}_{iii}.png and grid.png");
  }
  world.setup_barrier("rank 0 to draw grid.png");
  return tandem::kExitOk;
}

}  // namespace vavae
