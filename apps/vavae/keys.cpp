#include "keys.h"

#include <cstdint>
#include <string>
#include <vector>

#include "app/sample_keys.h"
#include "model/dit.h"
#include "tandem/config/schema.h"
#include "tandem/config/settings.h"
#include "tandem/dist/dist_keys.h"
#include "tandem/train/train_keys.h"

namespace vavae {

namespace {

// Each stage's model trains with its own length, batch and optimizer.
tandem::TrainSettings stage_defaults(const std::string& stage) {
  tandem::TrainSettings d;
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

void add_data_keys(tandem::Schema& s) {
  s.add("data.root", std::string("data_split"),
        "folder with train/ and val/, each holding user1, user2, ... folders of .png/.jpg/.jpeg images");
  s.add("data.image_size", int64_t{256}, "images are resized to this many pixels square");
  s.add("data.hflip", false, "flip training images horizontally at random (off: a flipped spectrogram reverses time)");
}

void add_vae_keys(tandem::Schema& s) {
  s.add("vae.preset", std::string("f16d32"),
        "VAE size: f16d32 (VA-VAE: 256x256 -> 32x16x16) or tiny (CPU: 32x32 -> 4x8x8)", {"f16d32", "tiny"});
  s.add("vae.init_from", std::string(""),
        "\"safetensors:FILE\": start from weights with the upstream names (a converted VA-VAE); empty: random");
  s.add("vae.kl_weight", 1e-6, "weight of the KL term against the L1 reconstruction");
  s.add("vae.vf_features", std::string(""),
        "HDF5 of a vision foundation model's features (e.g. DINOv2) per training image, [C, h, w] on the latent "
        "grid, named by the image's path under data.root: VA-VAE's alignment loss; empty: a plain KL-VAE");
  s.add("vae.vf_weight", 0.1, "weight of the VF loss on top of its adaptive weight (upstream: 0.1)");
  s.add("vae.checkpoint", std::string(""),
        "the VAE extract and sample use: a models/*.h5 or a .safetensors; empty: OUT/vae/models/best_model.h5, "
        "else final_model.h5, else the file of vae.init_from");
  tandem::add_model_keys(s, "vae", "train-vae", stage_defaults("vae"));
}

void add_extract_keys(tandem::Schema& s) {
  s.add("extract.use_mean", false, "store the posterior mean instead of a sample from it (upstream samples)");
  s.add("extract.batch", int64_t{32}, "images per rank per encoder pass");
}

void add_dit_keys(tandem::Schema& s) {
  tandem::declare_keys<DitKeys>(s);
  tandem::add_model_keys(s, "dit", "train-dit", stage_defaults("dit"));
}

void add_eval_keys(tandem::Schema& s) {
  s.add("eval.stem", std::string("auto"),
        "classifier's first layers: small (3x3 conv, no pool: full detail, 16x the compute), imagenet (7x7 stride-2 "
        "conv and max-pool); auto: small below 96 pixels",
        {"auto", "small", "imagenet"});
  s.add("eval.samples_dir", std::string(""), "generated images to judge; empty: sample.output_dir's default");
  tandem::add_model_keys(s, "eval", "evaluate's classifier", stage_defaults("eval"));
}

}  // namespace

tandem::Schema vavae_schema() {
  tandem::Schema s;
  tandem::add_dist_keys(s);
  tandem::TrainSettings d;
  d.out_dir = "runs/vavae";
  tandem::add_run_keys(s, d, {"vae", "dit", "eval"});
  add_data_keys(s);
  add_vae_keys(s);
  add_extract_keys(s);
  add_dit_keys(s);
  tandem::declare_keys<SampleKeys>(s);
  add_eval_keys(s);
  s.add("cmd.force", false, "complete: run every stage again, even those whose outputs exist");
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
