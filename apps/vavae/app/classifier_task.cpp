#include "app/classifier_task.h"

#include <torch/torch.h>

#include "data/load_image.h"
#include "data/sample_seed.h"
#include "tandem/train/classification.h"

namespace vavae {

ClassifierTask::ClassifierTask(tandem::nn::ResNetOptions model, int64_t image_size, bool hflip,
                               std::vector<ImageItem> train, std::vector<ImageItem> eval)
    : model_(std::move(model)),
      image_size_(image_size),
      hflip_(hflip),
      train_(std::move(train)),
      eval_(std::move(eval)) {}

std::shared_ptr<torch::nn::Module> ClassifierTask::build_model() { return tandem::nn::ResNet(model_).ptr(); }

tandem::Batch ClassifierTask::make_batch(const std::vector<int64_t>& indices, bool train, uint64_t seed) {
  const auto& items = train ? train_ : eval_;
  std::vector<at::Tensor> images;
  std::vector<int64_t> labels;
  for (const int64_t i : indices) {
    at::Tensor image = load_image(items.at(i).path, image_size_);
    if (train && hflip_ && at::rand({1}, sample_generator(seed, i)).item<float>() < 0.5f) image = image.flip({2});
    images.push_back(image);
    labels.push_back(items[i].user_id - 1);
  }
  return {{"image", torch::stack(images)}, {"label", torch::tensor(labels, torch::kLong)}};
}

tandem::Loss ClassifierTask::loss(torch::nn::Module& model, const tandem::Batch& batch) {
  return tandem::classification_loss(tandem::resnet_logits(model, batch.at("image")), batch.at("label"),
                                     batch.at("valid"));
}

tandem::EvalRows ClassifierTask::eval_rows(torch::nn::Module& model, const tandem::Batch& batch) {
  return tandem::classification_rows(tandem::resnet_logits(model, batch.at("image")), batch.at("label"));
}

tandem::Metrics ClassifierTask::eval_metrics(const tandem::EvalRows& rows) {
  return {{"loss", rows.at("loss").to(at::kDouble).mean().item<double>()},
          {"accuracy", tandem::classification_accuracy(rows)}};
}

std::vector<std::string> ClassifierTask::metric_names() const { return {"loss", "accuracy"}; }

}  // namespace vavae
