#include "app/judge.h"

#include <torch/torch.h>

#include "app/commands.h"
#include "app/pipeline.h"
#include "tandem/dist/world.h"
#include "tandem/io/checkpoint.h"
#include "tandem/train/trainer.h"

namespace vavae {

tandem::nn::ResNetOptions judge_model(const tandem::Config& config, int64_t num_users, int64_t image_size) {
  const std::string stem = tandem::read_keys<EvaluateKeys>(config).stem;
  tandem::nn::ResNetOptions model;
  model.depth = 18;
  model.num_classes = num_users;
  model.stem = stem != "auto" ? stem : image_size < 96 ? "small" : "imagenet";
  return model;
}

JudgeRun train_judge(tandem::World& world, const tandem::Config& config, ClassifierTask& task) {
  const tandem::TrainKeys stage = judge_settings(config);
  tandem::Trainer trainer(world, config, task, stage);
  JudgeRun run;
  run.status = trainer.run();
  run.micro_batch = trainer.micro_batch();
  if (run.status == tandem::kExitOk) run.model_file = tandem::trained_model(stage.out_dir);
  return run;
}

tandem::nn::ResNet load_judge(const std::string& model_file, const tandem::nn::ResNetOptions& options) {
  tandem::nn::ResNet net(options);
  tandem::restore(tandem::load_checkpoint(model_file), "model", tandem::module_state(*net));
  net->eval();
  return net;
}

}  // namespace vavae
