#pragma once
// Every key and flag of apps/vavae. The pipeline's stages train three
// different models (the VAE, the DiT, the judging classifier), each with its
// own length, batch and optimizer, so those keys live in the stage's table
// (vae.lr, dit.lr, eval.lr ...); the run's train.* keys (seed, precision,
// checkpoints ...) apply to all three.
namespace tandem {
class Schema;
}  // namespace tandem

namespace vavae {

tandem::Schema vavae_schema();

}  // namespace vavae
