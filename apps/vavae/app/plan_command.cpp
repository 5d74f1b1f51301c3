// vavae plan: the memory plan of each model the pipeline trains (the VAE,
// the DiT, evaluate's classifier) on its GPUs, before it runs
// (tandem/train/plan_command.h). Images at data.image_size; without
// plan.data, 10 users and, under vae.vf_features, features 1024 wide
// (DINOv2-L's); plan.data counts data.root's users and reads the features.
#include <torch/torch.h>

#include "app/commands.h"
#include "app/pipeline.h"
#include "app/vae_source.h"
#include "app/vae_task.h"
#include "data/user_folders.h"
#include "data/vf_features.h"
#include "model/dit.h"
#include "model/vae.h"
#include "tandem/config/config.h"
#include "tandem/dist/world.h"
#include "tandem/error.h"
#include "tandem/nn/resnet.h"
#include "tandem/train/plan_command.h"

namespace vavae {
namespace {

constexpr int64_t kAssumedUsers = 10, kAssumedFeatures = 1024;

tandem::PlanStage vae_stage(const tandem::Config& config, const VaeOptions& vae, int64_t size, int64_t features,
                            const std::string& inputs) {
  tandem::PlanStage stage;
  stage.name = "train-vae";
  stage.settings = vae_settings(config);
  stage.model = features > 0 ? std::shared_ptr<torch::nn::Module>(VfVae(vae, features).ptr())
                             : std::shared_ptr<torch::nn::Module>(Vae(vae).ptr());
  stage.fp32_weights = fp32_weights(*stage.model);
  stage.activations = [vae, size, features](const tandem::ActivationQuery& q) {
    return vae_activation_bytes(vae, size, features, q);
  };
  stage.inputs = inputs;
  return stage;
}

tandem::PlanStage dit_stage(const tandem::Config& config, const VaeOptions& vae, int64_t size, int64_t users,
                            const std::string& inputs) {
  const int64_t f = vae.downsample_factor();
  const DitOptions dit = tandem::read_keys<DitKeys>(config).options(size / f, vae.embed_dim, users);
  tandem::PlanStage stage;
  stage.name = "train-dit";
  stage.settings = dit_settings(config);
  stage.model = Dit(dit).ptr();
  stage.activations = [dit](const tandem::ActivationQuery& q) { return dit.activation_bytes(q); };
  stage.inputs = "latents of " + std::to_string(vae.embed_dim) + " x " + std::to_string(size / f) + " x " +
                 std::to_string(size / f) + ", " + inputs;
  return stage;
}

tandem::PlanStage classifier_stage(const tandem::Config& config, int64_t size, int64_t users,
                                   const std::string& inputs) {
  const EvaluateKeys keys = tandem::read_keys<EvaluateKeys>(config);
  tandem::nn::ResNetOptions model;
  model.depth = 18;
  model.num_classes = users;
  model.stem = keys.stem != "auto" ? keys.stem : size < 96 ? "small" : "imagenet";
  tandem::PlanStage stage;
  stage.name = "evaluate's classifier";
  stage.settings = judge_settings(config);
  stage.model = tandem::nn::ResNet(model).ptr();
  stage.activations = [model, size](const tandem::ActivationQuery& q) { return model.activation_bytes(q, size); };
  stage.inputs = inputs;
  return stage;
}

}  // namespace

int run_plan(tandem::World& world, const tandem::Config& config) {
  const DataKeys data = tandem::read_keys<DataKeys>(config);
  const VaeKeys keys = tandem::read_keys<VaeKeys>(config);
  const VaeOptions vae = VaeOptions::preset(keys.preset);
  const int64_t size = data.image_size, f = vae.downsample_factor();
  if (size < f || size % f != 0)
    throw tandem::UsageError("data.image_size " + std::to_string(size) + " must be a multiple of " + std::to_string(f) +
                             ", the downsampling of vae.preset " + keys.preset);
  int64_t users = kAssumedUsers, features = keys.vf_features.empty() ? 0 : kAssumedFeatures;
  std::string said = " (assumed; --data counts data.root's)";
  if (tandem::read_keys<tandem::PlanKeys>(config).data) {
    const auto [train, val] = scan_train_val(data);
    users = std::max(train.num_users, val.num_users);
    if (features > 0)
      features = read_vf_features(keys.vf_features, "vae.vf_features", train.items, data.root, size / f).size(1);
    said = " (" + data.root + ")";
  }
  const std::string images = "images of " + std::to_string(size) + " x " + std::to_string(size) + " pixels";
  const std::string aligned = features == 0 ? ", no VF alignment"
                                            : ", aligned with features " + std::to_string(features) + " wide" +
                                                  (said.find("assumed") != std::string::npos ? " (assumed)" : "");
  const std::string counted = std::to_string(users) + " users" + said;
  return tandem::run_plan(
      world, config,
      {vae_stage(config, vae, size, features, images + aligned), dit_stage(config, vae, size, users, counted),
       classifier_stage(config, size, users, images + ", " + counted)});
}

}  // namespace vavae
