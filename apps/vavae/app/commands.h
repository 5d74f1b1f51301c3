#pragma once
// apps/vavae's subcommands, the pipeline's stages, and the keys a stage alone
// reads; each returns the exit status. Each finds its inputs under the
// pipeline folder (app/pipeline.h).
#include <cstdint>
#include <string>

#include "tandem/config/settings.h"

namespace tandem {
class World;
}  // namespace tandem

namespace vavae {

// The extract.* keys, each declared once (tandem/config/settings.h).
struct ExtractKeys {
  bool use_mean = false;
  int64_t batch = 32;

  template <class Self, class Visit>
  static void each_key(Self& k, Visit&& visit) {
    visit("extract.use_mean", k.use_mean, "store the posterior mean instead of a sample from it (upstream samples)",
          tandem::any());
    visit("extract.batch", k.batch, "images per rank per encoder pass", tandem::at_least(1));
  }
};

// evaluate's eval.* keys; its classifier's training keys are under [eval]
// too (tandem::add_model_keys).
struct EvaluateKeys {
  std::string stem = "auto";
  std::string samples_dir;
  std::string inception_weights;
  int64_t samples_per_user = 10;

  template <class Self, class Visit>
  static void each_key(Self& k, Visit&& visit) {
    visit("eval.stem", k.stem,
          "classifier's first layers: small (3x3 conv, no pool: full detail, 16x the compute), imagenet (7x7 "
          "stride-2 conv and max-pool); auto: small below 96 pixels",
          tandem::one_of({"auto", "small", "imagenet"}));
    visit("eval.samples_dir", k.samples_dir, "generated images to judge; empty: sample.output_dir's default",
          tandem::any());
    visit("eval.inception_weights", k.inception_weights,
          "pytorch-fid's Inception-v3 weights (pt_inception-2015-12-05) as safetensors, for FID, KID, precision "
          "and recall against the real training images; empty: those are left out",
          tandem::any());
    visit("eval.samples_per_user", k.samples_per_user,
          "images per user that each of train-dit's evaluations samples under a dit.best_metric other than eval_loss",
          tandem::at_least(1));
  }
};

// complete's cmd.* key.
struct CompleteKeys {
  bool force = false;

  template <class Self, class Visit>
  static void each_key(Self& k, Visit&& visit) {
    visit("cmd.force", k.force, "complete: run every stage again, even those whose outputs exist", tandem::any());
  }
};

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
// The memory plan of each model the pipeline trains, before it runs
// (tandem/train/plan_command.h).
int run_plan(tandem::World& world, const tandem::Config& config);
// Every stage in order, skipping those whose outputs exist (unless cmd.force).
int run_complete(tandem::World& world, const tandem::Config& config);

}  // namespace vavae
