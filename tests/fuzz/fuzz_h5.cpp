// HDF5 files a user hands over: checkpoints and model files (io/checkpoint.h),
// the config a model file carries (config/checkpoint_config.h), restoring a
// model from one, and vavae's latent files. Any bytes make a file's contents
// or a UsageError naming it.
#include <torch/torch.h>

#include "app/latent_file.h"
#include "fuzz_input.h"
#include "keys.h"
#include "tandem/config/checkpoint_config.h"
#include "tandem/config/schema.h"
#include "tandem/io/checkpoint.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace tandem;
  static const Schema schema = vavae::vavae_schema();
  const std::string path = fuzz::write_input(data, size, "model.h5");
  fuzz::expect_clean([&] {
    const Checkpoint checkpoint = load_checkpoint(path);
    if (has_config(checkpoint)) config_from_checkpoint(schema, checkpoint);
    // The seeds' model: fc, a Linear(3, 2).
    torch::nn::Linear fc(3, 2);
    NamedTensors targets;
    for (const auto& [name, tensor] : module_state(*fc)) targets.emplace_back("fc." + name, tensor);
    restore(checkpoint, "model", targets);
  });
  fuzz::expect_clean([&] { config_from_checkpoint(schema, path); });
  fuzz::expect_clean([&] { vavae::read_latents(path); });
  return 0;
}
