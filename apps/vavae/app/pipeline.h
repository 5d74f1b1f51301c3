#pragma once
// Where each stage of the pipeline reads and writes, under one folder OUT
// (train.out_dir): vae/ (train-vae's run), latent_features/ (extract),
// dit/ (train-dit's run), samples/ (sample), evaluate/ (evaluate). A stage
// finds its inputs by these names, so stages run as separate jobs (Slurm
// dependencies, a requeue) as well as in one `complete`.
#include <string>

#include "tandem/config/config.h"
#include "tandem/train/train_keys.h"

namespace vavae {

std::string vae_run_dir(const tandem::Config& config);
std::string latent_dir(const tandem::Config& config);
std::string latent_file(const tandem::Config& config, const std::string& split);  // OUT/latent_features/<split>.h5
std::string dit_run_dir(const tandem::Config& config);
std::string samples_dir(const tandem::Config& config);   // sample.output_dir, or OUT/samples
std::string eval_run_dir(const tandem::Config& config);  // OUT/evaluate
// OUT/evaluate/real_features.safetensors: the real images' Inception features (app/image_features.h).
std::string real_features_file(const tandem::Config& config);

// The settings each model the pipeline trains with, for its command and for
// plan alike: its model's keys from its table ("vae", "dit", "eval"), the
// run's from [train], its own folder (vae_run_dir, dit_run_dir, and
// OUT/evaluate/classifier for evaluate's judge) and the metric that picks its
// best model (eval_l1, eval_loss, eval_accuracy).
tandem::TrainKeys vae_settings(const tandem::Config& config);
tandem::TrainKeys dit_settings(const tandem::Config& config);
tandem::TrainKeys judge_settings(const tandem::Config& config);

}  // namespace vavae
