#include "app/pipeline.h"

#include <filesystem>

#include "app/dit_task.h"
#include "app/sample_keys.h"
#include "model/dit.h"

namespace vavae {
namespace fs = std::filesystem;

namespace {

fs::path out(const tandem::Config& config) { return tandem::run_settings(config).out_dir; }

}  // namespace

std::string vae_run_dir(const tandem::Config& config) { return (out(config) / "vae").string(); }
std::string latent_dir(const tandem::Config& config) { return (out(config) / "latent_features").string(); }
std::string latent_file(const tandem::Config& config, const std::string& split) {
  return (out(config) / "latent_features" / (split + ".h5")).string();
}
std::string dit_run_dir(const tandem::Config& config) { return (out(config) / "dit").string(); }
std::string samples_dir(const tandem::Config& config) {
  const std::string given = tandem::read_fields<SampleKeys>(config).output_dir;
  return given.empty() ? (out(config) / "samples").string() : given;
}
std::string eval_run_dir(const tandem::Config& config) { return (out(config) / "evaluate").string(); }
std::string real_features_file(const tandem::Config& config) {
  return (out(config) / "evaluate" / "real_features.safetensors").string();
}

namespace {

tandem::TrainKeys stage_settings(const tandem::Config& config, const std::string& stage, const std::string& run_dir,
                                 const std::string& best_metric, const std::string& best_mode) {
  tandem::TrainKeys s = tandem::train_settings(config, stage);
  s.out_dir = run_dir;
  s.best_metric = best_metric;
  s.best_mode = best_mode;
  return s;
}

}  // namespace

tandem::TrainKeys vae_settings(const tandem::Config& config) {
  return stage_settings(config, "vae", vae_run_dir(config), "eval_l1", "min");
}
tandem::TrainKeys dit_settings(const tandem::Config& config) {
  const std::string best = tandem::read_keys<DitKeys>(config).best_metric;
  return stage_settings(config, "dit", dit_run_dir(config), best, dit_metric_mode(best.substr(5)));
}
tandem::TrainKeys judge_settings(const tandem::Config& config) {
  return stage_settings(config, "eval", (fs::path(eval_run_dir(config)) / "classifier").string(), "eval_accuracy",
                        "max");
}

}  // namespace vavae
