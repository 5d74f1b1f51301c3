// summarize export: the run's model as a Hugging Face GPT-2 folder (adapters
// merged), and LoRA's adapters alone as PEFT writes them.
#include <torch/torch.h>

#include <filesystem>

#include "app/command_setup.h"
#include "app/commands.h"
#include "app/inference.h"
#include "tandem/config/config.h"
#include "tandem/dist/world.h"
#include "tandem/error.h"
#include "tandem/program.h"
#include "model/gpt2_hf.h"
#include "model/lora.h"
#include "tandem/obs/log.h"

namespace fs = std::filesystem;

namespace summarize {

int run_export(tandem::World& world, const tandem::Config& config) {
  const std::string dir = tandem::read_keys<CommandKeys>(config).out;
  if (dir.empty()) throw tandem::UsageError("export needs --out DIR");
  const std::string path = default_checkpoint(config);
  const ModelOptions spec = trained_spec(config, path);
  GPT model = load_model(world, config, spec, path).model;
  if (world.rank() != 0) return tandem::kExitOk;
  model->to(torch::kCPU);
  if (spec.lora.enabled()) {
    const std::string adapter = (fs::path(dir) / "adapter").string();
    export_peft_adapter(model, spec.lora, spec.init_from.substr(3), adapter);
    tandem::log::info("exported the adapters alone to ", adapter,
                      " (PEFT's adapter_config.json, adapter_model.safetensors)");
    merge_lora(model);
  }
  export_hf(model, dir);
  tandem::log::info("exported to ", dir, " (config.json, model.safetensors",
                    spec.lora.enabled() ? ", the adapters merged" : "", ")");
  return tandem::kExitOk;
}

}  // namespace summarize
