#include <torch/torch.h>

#include <chrono>
#include <filesystem>

#include "app/commands.h"
#include "app/latent_file.h"
#include "app/pipeline.h"
#include "app/vae_source.h"
#include "data/load_image.h"
#include "data/sample_seed.h"
#include "data/user_folders.h"
#include "tandem/config/config.h"
#include "tandem/data/eval_shard.h"
#include "tandem/data/loader.h"
#include "tandem/dist/seed.h"
#include "tandem/dist/placement.h"
#include "tandem/dist/world.h"
#include "tandem/error.h"
#include "tandem/io/h5file.h"
#include "tandem/obs/log.h"
#include "tandem/random.h"

namespace vavae {
namespace fs = std::filesystem;
namespace log = tandem::log;

namespace {

struct ExtractJob {
  LoadedVae vae;
  c10::Device device;
  int64_t image_size;
  int64_t batch;
  bool use_mean;
  uint64_t seed;
};

std::string part_path(const std::string& dir, const std::string& split, int rank) {
  return (fs::path(dir) / "parts" / (split + ".rank" + std::to_string(rank) + ".h5")).string();
}

// This rank's share of the split, in fp32 whatever train.precision says: the
// latents are the DiT's data, and half precision would quantise them.
void encode_shard(tandem::World& world, const ExtractJob& e, const ImageSplit& split, const std::string& part) {
  const auto shard = tandem::eval_shard(static_cast<int64_t>(split.items.size()), world.size(), world.rank());
  std::vector<at::Tensor> latents;
  torch::NoGradGuard no_grad;
  for (const auto& mb : shard.micro_batches(e.batch)) {
    std::vector<at::Tensor> images, noise;
    for (const int64_t i : mb.indices) images.push_back(load_image(split.items.at(i).path, e.image_size));
    const Posterior posterior = Vae(e.vae.vae)->encode(torch::stack(images).to(e.device));
    if (e.use_mean) {
      latents.push_back(posterior.mean.cpu());
      continue;
    }
    // Each image's own draw, so the file is the same on any number of ranks.
    const auto shape = posterior.mean.sizes().slice(1).vec();
    for (const int64_t i : mb.indices) noise.push_back(at::randn(shape, sample_generator(e.seed, i)));
    latents.push_back(posterior.sample(torch::stack(noise).to(e.device)).cpu());
  }
  fs::create_directories(fs::path(part).parent_path());
  tandem::H5File file(part, tandem::H5File::Mode::kCreate);
  file.write("latents", torch::cat(latents).to(at::kFloat).contiguous());
  file.write("index", torch::tensor(shard.indices, torch::kLong));
  file.write("valid", tandem::valid_mask(shard.valid));
  file.close();
}

// Rank 0: every rank's part in dataset order, padding dropped.
LatentSet merge_parts(const std::string& dir, const std::string& split_name, const ImageSplit& split, int ranks) {
  const int64_t n = static_cast<int64_t>(split.items.size());
  LatentSet set;
  std::vector<int64_t> ids;
  for (const auto& item : split.items) ids.push_back(item.user_id);
  set.user_ids = torch::tensor(ids, torch::kLong);
  for (int r = 0; r < ranks; ++r) {
    const std::string path = part_path(dir, split_name, r);
    const tandem::H5File file(path);
    const at::Tensor latents = file.read("latents"), index = file.read("index");
    const at::Tensor valid = file.read("valid").to(at::kBool);
    if (!set.latents.defined()) {
      auto shape = latents.sizes().vec();
      shape[0] = n;
      set.latents = torch::zeros(shape, torch::kFloat);
    }
    set.latents.index_copy_(0, index.index({valid}), latents.index({valid}));
  }
  return set;
}

}  // namespace

int run_extract(tandem::World& world, const tandem::Config& config) {
  const DataKeys data = tandem::read_keys<DataKeys>(config);
  const ExtractKeys keys = tandem::read_keys<ExtractKeys>(config);
  const auto [train, val] = scan_train_val(data);
  const std::string vae_path = resolve_vae_path(config);
  // In fp32 on purpose, whatever train.precision says: the latents are the
  // DiT's training data, written once and read for every epoch, so their
  // rounding is paid for by every later stage.
  ExtractJob e{load_vae(vae_path, tandem::read_keys<VaeKeys>(config).preset),
               tandem::rank_device(world, config),
               data.image_size,
               keys.batch,
               keys.use_mean,
               tandem::shared_seed(world, tandem::run_settings(config).seed)};
  const int64_t f = e.vae.vae->options().downsample_factor();
  if (e.image_size % f != 0)
    throw tandem::UsageError("data.image_size " + std::to_string(e.image_size) + " must be a multiple of " +
                             std::to_string(f) + ", the VAE's downsampling");
  e.vae.vae->to(e.device);
  const std::string dir = latent_dir(config);
  if (world.is_main())
    log::info("extract: ", train.items.size(), " training and ", val.items.size(), " validation images with ", vae_path,
              " (", e.vae.preset, ", weights ", e.vae.hash, "), ", e.use_mean ? "posterior mean" : "posterior sample");

  const int64_t num_users = std::max(train.num_users, val.num_users);
  const std::pair<const char*, const ImageSplit*> splits[] = {{"train", &train}, {"val", &val}};
  for (const auto& [name, split] : splits) {
    const auto t0 = std::chrono::steady_clock::now();
    // Train and val draw from different streams.
    ExtractJob mine = e;
    mine.seed = tandem::mix_seed(e.seed, std::string(name) == "train" ? 1 : 2);
    encode_shard(world, mine, *split, part_path(dir, name, world.rank()));
    // Rank 0 merges the parts of the split before (one-sided) while the
    // others encode this one.
    world.setup_barrier("every rank's " + std::string(name) + " latents (rank 0 merges the parts)");
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (!world.is_main()) continue;
    LatentSet set = merge_parts(dir, name, *split, world.size());
    set.num_users = num_users;
    set.image_size = e.image_size;
    set.vae_path = vae_path;
    set.vae_hash = e.vae.hash;
    set.vae_preset = e.vae.preset;
    if (std::string(name) == "train") std::tie(set.mean, set.std) = channel_stats(set.latents);
    write_latents(latent_file(config, name), set);
    log::info("extract: ", name, ": ", split->items.size(), " images in ", seconds, " s (",
              split->items.size() / std::max(seconds, 1e-9), " images/s over ", world.size(), " ranks) -> ",
              latent_file(config, name), ", latents ", set.latents.sizes());
  }
  if (world.is_main()) fs::remove_all(fs::path(dir) / "parts");
  world.setup_barrier("rank 0 to write the latents");
  return tandem::kExitOk;
}

}  // namespace vavae
