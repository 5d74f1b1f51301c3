#pragma once
// `APP plan`: will the job fit, before it runs. From the job file and flags,
// with nothing written (but a task's data cache under plan.data) and no GPU
// needed, the memory plan a rank of each
// model the job trains would make (memory_plan.h), and what
// train.micro_batch = "auto" and train.recompute = "auto" would pick there
// (memory_fit.h: the same computation the Trainer makes at its start), on
// this machine's devices or on GPUs named by plan.gpus (plan_gpus.h).
//
// Exit status: 0 when every model fits under the job's dist.shard (with
// plan.shard = "all", under at least one setting); otherwise 2, with what
// would make it fit: for "auto" fitting nothing, the UsageError `train`
// stops with; for a fixed micro-batch over the budget (which `train` runs,
// warning, and backs off when it runs out of memory), what "auto" would
// take. 2 for bad input.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "tandem/config/settings.h"
#include "tandem/train/memory_fit.h"
#include "tandem/train/train_keys.h"

namespace torch::nn {
class Module;
}

namespace tandem {

class Config;
class Schema;
class World;

// The plan command's own keys, each declared once.
struct PlanKeys {
  std::string gpus;
  std::string shard;
  bool data = false;

  template <class Self, class Visit>
  static void each_key(Self& k, Visit&& visit) {
    visit("plan.gpus", k.gpus,
          "plan: the GPUs to plan for, NAMExCOUNT (t4x2; names in docs/training.md: t4, l4, a10g, v100-16gb, "
          "v100-32gb, a100-40gb, a100-80gb, h100-80gb, h200) or SIZExCOUNT (15.0GiBx2); empty: this machine's",
          any());
    visit("plan.shard", k.shard, "plan: the dist.shard to plan, or \"all\" for each side by side; empty: the job's",
          one_of({"", "none", "optimizer", "gradients", "all"}));
    visit("plan.data", k.data,
          "plan: read the job's data and plan its longest inputs, as training does; false: the longest the "
          "settings allow",
          any());
  }
};

// The keys, and the flags --gpus, --shard and --data.
void add_plan_keys(Schema& schema);

// A model the job trains, as the plan sees it.
struct PlanStage {
  std::string name;    // "train"; vavae's "train-vae", "train-dit"
  TrainKeys settings;  // its train_settings
  // build_model's tensors: their shapes, dtypes and trainability; their
  // values do not matter (no weights file need be read).
  std::shared_ptr<torch::nn::Module> model;
  bool frozen_base = false;               // Task::frozen_base is not empty
  std::vector<std::string> fp32_weights;  // Task::fp32_weights
  ActivationsAt activations;              // Task::activation_bytes
  bool packed = false;                    // Task::pack_tokens() > 0
  std::string inputs;                     // the inputs planned for, in words
};

int run_plan(World& world, const Config& config, const std::vector<PlanStage>& stages);

}  // namespace tandem
