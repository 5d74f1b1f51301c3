#include "keys.h"

#include <cstdint>
#include <string>
#include <vector>

#include "app/commands.h"
#include "app/sample_keys.h"
#include "app/vae_source.h"
#include "data/user_folders.h"
#include "model/dit.h"
#include "tandem/train/plan_command.h"
#include "tandem/config/schema.h"
#include "tandem/config/settings.h"
#include "tandem/dist/dist_keys.h"
#include "tandem/train/train_keys.h"

namespace vavae {

namespace {

// Each stage's model trains with its own length, batch and optimizer.
tandem::TrainKeys stage_defaults(const std::string& stage) {
  tandem::TrainKeys d;
  d.lr = 1e-4;
  d.schedule = "constant";
  d.weight_decay = 0.0;
  if (stage == "vae") {
    d.epochs = 20;
    d.beta1 = 0.5;
    d.beta2 = 0.9;
    d.grad_clip = 0.0;
  } else if (stage == "dit") {
    d.epochs = 80;
    d.micro_batch.value = 32;
    d.schedule = "cosine";
    d.beta2 = 0.95;
    d.ema_decay = 0.9999;
  } else {
    d.epochs = 10;
    d.micro_batch.value = 32;
    d.lr = 1e-3;
    d.schedule = "cosine";
    d.weight_decay = 1e-4;
  }
  return d;
}

void add_vae_keys(tandem::Schema& s) {
  tandem::declare_keys<VaeKeys>(s);
  tandem::add_model_keys(s, "vae", "train-vae", stage_defaults("vae"));
}

void add_dit_keys(tandem::Schema& s) {
  tandem::declare_keys<DitKeys>(s);
  tandem::add_model_keys(s, "dit", "train-dit", stage_defaults("dit"));
}

void add_eval_keys(tandem::Schema& s) {
  tandem::declare_keys<EvaluateKeys>(s);
  tandem::add_model_keys(s, "eval", "evaluate's classifier", stage_defaults("eval"));
}

}  // namespace

tandem::Schema vavae_schema() {
  tandem::Schema s;
  tandem::add_dist_keys(s);
  tandem::TrainKeys d;
  d.out_dir = "runs/vavae";
  tandem::add_run_keys(s, d, {"vae", "dit", "eval"});
  tandem::declare_keys<DataKeys>(s);
  add_vae_keys(s);
  tandem::declare_keys<ExtractKeys>(s);
  add_dit_keys(s);
  tandem::declare_keys<SampleKeys>(s);
  add_eval_keys(s);
  tandem::declare_keys<CompleteKeys>(s);
  tandem::add_plan_keys(s);
  s.alias("--run-dir", "train.out_dir", "the pipeline's folder (OUT): vae/, latent_features/, dit/, samples/");
  s.alias("--data-root", "data.root");
  s.alias("--image-size", "data.image_size");
  s.alias("--seed", "sample.seed");
  s.alias("--precision", "train.precision");
  s.alias("--vae-checkpoint", "vae.checkpoint");
  s.alias("--dit-checkpoint", "sample.dit_checkpoint");
  s.alias("--output-dir", "sample.output_dir");
  s.alias("--user-ids", "sample.user_ids", "users to sample: --user-ids 1 2 3, --user-ids 1,2,3 or [1, 2, 3]");
  s.alias("--num-samples-per-user", "sample.num_samples_per_user");
  s.alias("--guidance-scale", "sample.guidance_scale");
  s.alias("--num-steps", "sample.num_steps");
  s.alias("--force", "cmd.force");
  return s;
}

}  // namespace vavae
