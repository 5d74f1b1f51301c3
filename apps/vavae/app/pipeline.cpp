#include "app/pipeline.h"

#include <filesystem>

#include "keys.h"
#include "tandem/error.h"

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
  const std::string given = c.get_string("sample.output_dir");
  return given.empty() ? (out(c) / "samples").string() : given;
}
std::string eval_run_dir(const tandem::Config& c) { return (out(c) / "evaluate").string(); }

tandem::Config stage_config(const tandem::Config& c, const std::string& stage, const std::string& run_dir,
                            const std::string& best_metric, const std::string& best_mode) {
  tandem::Config s = c;
  for (const auto& key : stage_train_keys()) {
    const std::string train_key = "train." + key;
    if (c.source(train_key) != "default")
      throw tandem::UsageError(train_key + " (" + c.source(train_key) + ") is set per stage in apps/vavae: set vae." +
                               key + ", dit." + key + " or eval." + key + " instead");
    const std::string from = stage + "." + key;
    s.set(train_key, c.get(from), from);
  }
  s.set("train.out_dir", run_dir, "the stage's folder");
  s.set("train.best_metric", best_metric, "apps/vavae " + stage);
  s.set("train.best_mode", best_mode, "apps/vavae " + stage);
  return s;
}

}  // namespace vavae
