#pragma once
// apps/carotid's subcommands; each returns the exit status.
namespace tandem {
class Config;
class World;
}  // namespace tandem

namespace carotid {

// Split, train with per-epoch validation, then the test report with the best model.
int run_train(tandem::World& world, tandem::Config config);
// Probabilities per image and per person for new images, scored when labels are given.
int run_predict(tandem::World& world, const tandem::Config& config);

}  // namespace carotid
