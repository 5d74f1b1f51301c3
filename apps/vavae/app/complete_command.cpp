#include <filesystem>
#include <functional>

#include "app/commands.h"
#include "app/pipeline.h"
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
};

bool exists(const std::string& path) { return fs::exists(path); }

}  // namespace

int run_complete(tandem::World& world, const tandem::Config& c) {
  const std::vector<Stage> stages = {
      {"train-vae", run_train_vae,
       [](const tandem::Config& c) {
         // Pretrained weights need no training stage.
         return exists(vae_run_dir(c) + "/vae.safetensors") || !c.get_string("vae.checkpoint").empty();
       }},
      {"extract", run_extract,
       [](const tandem::Config& c) { return exists(latent_file(c, "train")) && exists(latent_file(c, "val")); }},
      {"train-dit", run_train_dit,
       [](const tandem::Config& c) { return exists(dit_run_dir(c) + "/models/final_model.h5"); }},
      {"sample", run_sample, [](const tandem::Config& c) { return exists(samples_dir(c) + "/grid.png"); }},
      {"evaluate", run_evaluate, [](const tandem::Config& c) { return exists(eval_run_dir(c) + "/evaluate.json"); }},
  };
  const bool force = c.get_bool("cmd.force");
  for (const auto& stage : stages) {
    // Every rank must take the same branch: rank 0 decides.
    bool skip = world.is_main() && !force && stage.done(c);
    world.broadcast_bytes(&skip, sizeof skip, 0);
    if (skip) {
      if (world.is_main()) tandem::log::info("complete: ", stage.name, ": outputs exist, skipped (--force reruns it)");
      continue;
    }
    if (world.is_main()) tandem::log::info("complete: ", stage.name);
    const int status = stage.run(world, c);
    if (status != tandem::kExitOk) return status;
  }
  return tandem::kExitOk;
}

}  // namespace vavae
