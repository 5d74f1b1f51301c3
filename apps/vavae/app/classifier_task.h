#pragma once
// evaluate's judge: a ResNet-18 (libcore's, small stem below 96 pixels)
// trained through the shared loop to tell users apart from their real
// images. Its evaluation set is swapped after training, from the real
// validation images to the generated ones, so one evaluate() pass scores each.
#include <cstdint>
#include <vector>

#include "data/user_folders.h"
#include "tandem/nn/resnet.h"
#include "tandem/train/task.h"

namespace vavae {

class ClassifierTask : public tandem::Task {
 public:
  ClassifierTask(tandem::nn::ResNetOptions model, int64_t image_size, bool hflip, std::vector<ImageItem> train,
                 std::vector<ImageItem> eval);

  void set_eval(std::vector<ImageItem> eval) { eval_ = std::move(eval); }

  std::shared_ptr<torch::nn::Module> build_model() override;
  tandem::Activations activation_bytes(const tandem::ActivationQuery& query) const override {
    return model_.activation_bytes(query, image_size_);
  }
  bool fixed_shapes() const override { return true; }  // images of one size
  int64_t train_size() const override { return static_cast<int64_t>(train_.size()); }
  int64_t eval_size() const override { return static_cast<int64_t>(eval_.size()); }
  tandem::Batch make_batch(const std::vector<int64_t>& indices, bool train, uint64_t seed) override;
  tandem::Loss loss(torch::nn::Module& model, const tandem::Batch& batch) override;
  // tandem::classification_rows: evaluate reads "pred" and "label" (0-based users).
  tandem::EvalRows eval_rows(torch::nn::Module& model, const tandem::Batch& batch) override;
  // "loss" and "accuracy".
  tandem::Metrics eval_metrics(const tandem::EvalRows& rows) override;
  std::vector<std::string> metric_names() const override;
  std::string metric_mode(const std::string& name) const override { return name == "loss" ? "min" : "max"; }

 private:
  tandem::nn::ResNetOptions model_;
  int64_t image_size_;
  bool hflip_;
  std::vector<ImageItem> train_, eval_;
};

}  // namespace vavae
