#pragma once
// evaluate's judge, a ResNet-18 that tells users apart from their real
// images (app/classifier_task.h), trained once per run folder in
// OUT/evaluate/classifier and used by evaluate and, under a dit.best_metric
// judged by sampling, by train-dit's evaluations.
#include <cstdint>
#include <string>

#include "app/classifier_task.h"
#include "tandem/config/config.h"
#include "tandem/nn/resnet.h"

namespace tandem {
class World;
}  // namespace tandem

namespace vavae {

// ResNet-18 for `num_users` classes, eval.stem's first layers ("auto":
// small below 96 pixels).
tandem::nn::ResNetOptions judge_model(const tandem::Config& config, int64_t num_users, int64_t image_size);

struct JudgeRun {
  int status = 0;          // the trainer's exit status
  std::string model_file;  // the model validation picked (kExitOk only)
  int64_t micro_batch = 1;
};

// Trains `task`'s classifier with the judge's settings (judge_settings);
// a finished run returns at once. A collective.
JudgeRun train_judge(tandem::World& world, const tandem::Config& config, ClassifierTask& task);

// The judge of `model_file`, in evaluation mode on the CPU.
tandem::nn::ResNet load_judge(const std::string& model_file, const tandem::nn::ResNetOptions& options);

}  // namespace vavae
