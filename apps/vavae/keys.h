#pragma once
// Every key and flag of apps/vavae. The pipeline's stages train three
// different models (the VAE, the DiT, the judging classifier), each with its
// own optimizer settings, so those live in the stage's table (vae.lr, dit.lr,
// eval.lr ...) and are copied into train.* for that stage only; the shared
// train.* keys (seed, precision, checkpoints ...) apply to all three.
#include <string>
#include <vector>

namespace tandem {
class Schema;
}  // namespace tandem

namespace vavae {

tandem::Schema vavae_schema();

// The train.* keys a stage takes from its own table.
const std::vector<std::string>& stage_train_keys();

}  // namespace vavae
