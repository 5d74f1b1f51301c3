#pragma once
// apps/vavae's subcommands, the pipeline's stages; each returns the exit
// status. Each finds its inputs under the pipeline folder (app/pipeline.h).
namespace tandem {
class Config;
class World;
}  // namespace tandem

namespace vavae {

// Stage 0: trains the VAE on the training images; OUT/vae/ and its export OUT/vae/vae.safetensors.
int run_train_vae(tandem::World& world, const tandem::Config& config);
// Stage 1: encodes train and val into OUT/latent_features/{train,val}.h5.
int run_extract(tandem::World& world, const tandem::Config& config);
// Stage 2: trains the class-conditional DiT on the latents; OUT/dit/.
int run_train_dit(tandem::World& world, const tandem::Config& config);
// Stage 3: images per user from the DiT's EMA weights; OUT/samples/.
int run_sample(tandem::World& world, const tandem::Config& config);
// Stage 3: how often a classifier trained on real images recognises the
// user of a generated image; OUT/evaluate/evaluate.json.
int run_evaluate(tandem::World& world, const tandem::Config& config);
// Every stage in order, skipping those whose outputs exist (unless cmd.force).
int run_complete(tandem::World& world, const tandem::Config& config);

}  // namespace vavae
