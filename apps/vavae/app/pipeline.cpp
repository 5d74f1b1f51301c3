#include "app/pipeline.h"

#include <filesystem>

#include "app/sample_keys.h"

namespace vavae {
namespace fs = std::filesystem;

namespace {

fs::path out(const tandem::Config& c) { return c.get_string("train.out_dir"); }

}  // namespace

std::string vae_run_dir(const tandem::Config& c) { return (out(c) / "vae").string(); }
std::string latent_dir(const tandem::Config& c) { return (out(c) / "latent_features").string(); }
std::string latent_file(const tandem::Config& c, const std::string& split) {
  return (out(c) / "latent_features" / (split + ".h5")).string();
}
std::string dit_run_dir(const tandem::Config& c) { return (out(c) / "dit").string(); }
std::string samples_dir(const tandem::Config& c) {
  const std::string given = tandem::read_fields<SampleKeys>(c).output_dir;
  return given.empty() ? (out(c) / "samples").string() : given;
}
std::string eval_run_dir(const tandem::Config& c) { return (out(c) / "evaluate").string(); }

tandem::TrainSettings stage_settings(const tandem::Config& c, const std::string& stage, const std::string& run_dir,
                                     const std::string& best_metric, const std::string& best_mode) {
  tandem::TrainSettings s = tandem::train_settings(c, stage);
  s.out_dir = run_dir;
  s.best_metric = best_metric;
  s.best_mode = best_mode;
  return s;
}

}  // namespace vavae
