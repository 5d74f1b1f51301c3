#pragma once
// apps/carotid's subcommands; each returns the exit status.
namespace tandem {
class Config;
class World;
}  // namespace tandem

namespace carotid {

// Split, train with per-epoch validation, then the test report with the best model.
int run_train(tandem::World& world, tandem::Config config);
// Person-level K-fold cross-validation: a train run per fold in CV/fold-k,
// then the gathered report (run_cv_report) once every fold is done.
int run_cv(tandem::World& world, const tandem::Config& config);
// The report of a cross-validation folder (cmd.run_dir) whose folds are done.
int run_cv_report(tandem::World& world, const tandem::Config& config);
// Probabilities per image and per person for new images, scored when labels are given.
int run_predict(tandem::World& world, const tandem::Config& config);

}  // namespace carotid
