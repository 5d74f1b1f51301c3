#include <ctime>
#include <filesystem>
#include <functional>
#include <string>

#include "app/commands.h"
#include "app/pipeline.h"
#include "app/vae_source.h"
#include "tandem/config/config.h"
#include "tandem/dist/world.h"
#include "tandem/error.h"
#include "tandem/obs/log.h"

namespace vavae {
namespace fs = std::filesystem;

namespace {

struct Stage {
  const char* name;
  std::function<int(tandem::World&, const tandem::Config&)> run;
  // The output that says the stage finished. Only a finished training run
  // has final_model.h5; one preempted midway resumes from its checkpoint.
  std::function<bool(const tandem::Config&)> done;
  // The training run's folder, "" for a stage that trains nothing. --force
  // sets a finished one aside, or the run would resume at its last step and
  // train nothing.
  std::function<std::string(const tandem::Config&)> run_dir;
  // Why the stage is not needed at all, forced or not; "" when it is.
  std::function<std::string(const tandem::Config&)> unneeded = [](const tandem::Config&) { return std::string(); };
};

bool exists(const std::string& path) { return fs::exists(path); }

// Renames `dir` to DIR.replaced-YYYYmmdd-HHMMSS (a free name), so that a
// forced stage trains afresh and the run it replaces is kept.
std::string set_aside(const std::string& dir) {
  const std::time_t now = std::time(nullptr);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", std::localtime(&now));
  std::string to = dir + ".replaced-" + stamp;
  for (int n = 2; fs::exists(to); ++n) to = dir + ".replaced-" + stamp + "-" + std::to_string(n);
  fs::rename(dir, to);
  return to;
}

}  // namespace

int run_complete(tandem::World& world, const tandem::Config& config) {
  const auto trains_nothing = [](const tandem::Config&) { return std::string(); };
  const std::vector<Stage> stages = {
      {"train-vae", run_train_vae,
       [](const tandem::Config& config) { return exists(vae_run_dir(config) + "/vae.safetensors"); }, vae_run_dir,
       // Pretrained weights need no training.
       [](const tandem::Config& config) {
         return tandem::read_keys<VaeKeys>(config).checkpoint.empty() ? std::string()
                                                                      : "vae.checkpoint is given, nothing to train";
       }},
      {"extract", run_extract,
       [](const tandem::Config& config) {
         return exists(latent_file(config, "train")) && exists(latent_file(config, "val"));
       },
       trains_nothing},
      {"train-dit", run_train_dit,
       [](const tandem::Config& config) { return exists(dit_run_dir(config) + "/models/final_model.h5"); },
       dit_run_dir},
      {"sample", run_sample, [](const tandem::Config& config) { return exists(samples_dir(config) + "/grid.png"); },
       trains_nothing},
      {"evaluate", run_evaluate,
       [](const tandem::Config& config) { return exists(eval_run_dir(config) + "/evaluate.json"); }, eval_run_dir},
  };
  const bool force = tandem::read_keys<CompleteKeys>(config).force;
  for (const auto& stage : stages) {
    if (const std::string why = stage.unneeded(config); !why.empty()) {
      if (world.is_main()) tandem::log::info("complete: ", stage.name, ": ", why);
      continue;
    }
    // Every rank must take the same branch: rank 0 decides.
    bool done = world.is_main() && stage.done(config);
    world.broadcast_bytes(&done, sizeof done, 0);
    if (done && !force) {
      if (world.is_main()) tandem::log::info("complete: ", stage.name, ": outputs exist, skipped (--force reruns it)");
      continue;
    }
    const std::string run_dir = stage.run_dir(config);
    if (done && !run_dir.empty() && world.is_main() && fs::exists(run_dir)) {
      const std::string kept = set_aside(run_dir);
      tandem::log::info("complete: ", stage.name, ": --force: the finished run is kept as ", kept);
    }
    world.barrier();
    if (world.is_main()) tandem::log::info("complete: ", stage.name);
    const int status = stage.run(world, config);
    if (status != tandem::kExitOk) return status;
  }
  return tandem::kExitOk;
}

}  // namespace vavae
