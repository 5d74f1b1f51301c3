// carotid plan: the memory plan of the job's training on its GPUs, before it
// runs (tandem/train/plan_command.h). Images at data.image_size, the
// classes of model.classes (two when unset), unless plan.data reads the
// label sheet for them.
#include "app/commands.h"
#include "app/image_settings.h"
#include "app/model.h"
#include "data/dataset.h"
#include "tandem/config/config.h"
#include "tandem/dist/seed.h"
#include "tandem/dist/world.h"
#include "tandem/train/plan_command.h"
#include "tandem/train/train_keys.h"

namespace carotid {

int run_plan(tandem::World& world, const tandem::Config& config) {
  const ImageKeys image_keys = tandem::read_keys<ImageKeys>(config);
  const ModelKeys model_keys = tandem::read_keys<ModelKeys>(config);
  tandem::PlanStage stage;
  stage.settings = tandem::train_settings(config);
  int64_t classes = model_keys.classes.empty() ? 2 : static_cast<int64_t>(model_keys.classes.size());
  std::string source =
      model_keys.classes.empty() ? "model.classes unset; --data reads the label sheet" : "model.classes";
  if (tandem::read_keys<tandem::PlanKeys>(config).data) {
    const DataKeys data = data_settings(config);
    classes = load_dataset(data, data_seed(data, tandem::shared_seed(world, stage.settings.seed))).num_classes();
    source = data.label_file;
  }
  const ModelOptions spec = model_options(model_keys, image_keys, classes);
  const int64_t size = image_store_options(image_keys).size;
  stage.name = "ResNet-" + std::to_string(model_keys.depth);
  stage.inputs = "images of " + std::to_string(size) + " x " + std::to_string(size) + " pixels, " +
                 std::to_string(classes) + " classes (" + source + ")";
  // Its shapes without starting weights (model.init_from is not read).
  stage.model = tandem::nn::ResNet(spec.resnet).ptr();
  stage.activations = [resnet = spec.resnet, size](const tandem::ActivationQuery& q) {
    return resnet.activation_bytes(q, size);
  };
  return tandem::run_plan(world, config, {stage});
}

}  // namespace carotid
