#include "app/classifier_task.h"

#include <torch/torch.h>

#include "data/load_image.h"
#include "data/sample_seed.h"

namespace vavae {

ClassifierTask::ClassifierTask(tandem::nn::ResNetOptions model, int64_t image_size, bool hflip,
                               std::vector<ImageItem> train, std::vector<ImageItem> eval)
    : model_(std::move(model)), image_size_(image_size), hflip_(hflip), train_(std::move(train)), eval_(std::move(eval)) {}

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

at::Tensor ClassifierTask::loss(torch::nn::Module& model, const tandem::Batch& batch) {
  auto& net = dynamic_cast<tandem::nn::ResNetImpl&>(model);
  return torch::nn::functional::cross_entropy(net.forward(batch.at("image")).to(at::kFloat), batch.at("label"));
}

tandem::EvalRows ClassifierTask::eval_rows(torch::nn::Module& model, const tandem::Batch& batch) {
  auto& net = dynamic_cast<tandem::nn::ResNetImpl&>(model);
  const at::Tensor logits = net.forward(batch.at("image")).to(at::kFloat);
  const at::Tensor each = torch::nn::functional::cross_entropy(
      logits, batch.at("label"), torch::nn::functional::CrossEntropyFuncOptions().reduction(torch::kNone));
  return {{"loss", each.cpu()}, {"pred", logits.argmax(1).cpu()}, {"label", batch.at("label").cpu()}};
}

tandem::Metrics ClassifierTask::eval_metrics(const tandem::EvalRows& rows) {
  last_rows_ = rows;
  return {{"loss", rows.at("loss").to(at::kDouble).mean().item<double>()},
          {"accuracy", rows.at("pred").eq(rows.at("label")).to(at::kDouble).mean().item<double>()}};
}

}  // namespace vavae
