#pragma once
// The subcommands of apps/summarize. Each returns the process exit status.
namespace tandem {
class Config;
class World;
}  // namespace tandem

namespace summarize {

// train, then eval on validation, then predict the test set when one is given.
int run_all(tandem::World& world, const tandem::Config& config);
int run_train(tandem::World& world, const tandem::Config& config);
int run_eval(tandem::World& world, const tandem::Config& config);
int run_predict(tandem::World& world, const tandem::Config& config);
int run_generate(tandem::World& world, const tandem::Config& config);
int run_export(tandem::World& world, const tandem::Config& config);
int run_tokenize(tandem::World& world, const tandem::Config& config);
int run_score(tandem::World& world, const tandem::Config& config);

}  // namespace summarize
