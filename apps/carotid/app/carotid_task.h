#pragma once
// apps/carotid's part of the shared training loop: images of persons in,
// class probabilities out; cross-entropy (optionally class-weighted, smoothed
// or mixed with mixup) to learn from, and metrics at image and at person
// level (a person's probabilities are the mean of their images') to judge by.
#include <cstdint>
#include <string>
#include <vector>

#include "app/model.h"
#include "images/image_store.h"
#include "metrics/classifier_metrics.h"
#include "tandem/config/settings.h"
#include "tandem/image/transform.h"
#include "tandem/train/classification.h"
#include "tandem/train/task.h"

namespace carotid {

// The loss's train.* keys that carotid adds to the shared ones, each declared
// once (tandem/config/settings.h).
struct LossKeys {
  double label_smoothing = 0.0;
  std::string class_weights = "none";

  template <class Self, class Visit>
  static void each_key(Self& k, Visit&& visit) {
    visit("train.label_smoothing", k.label_smoothing,
          "training targets (1 - e) one-hot + e / classes, as torch's cross_entropy(label_smoothing=e)",
          tandem::fraction());
    visit("train.class_weights", k.class_weights,
          "weigh the loss by class: balanced = n_samples / (n_classes x class count), as scikit-learn",
          tandem::one_of({"none", "balanced"}));
  }
};

struct Sample {
  int64_t image = 0;   // index into the ImageStore
  int64_t person = 0;  // index into `persons` below
  int64_t label = 0;
};

struct TaskOptions {
  ModelOptions model;
  tandem::image::AugmentOptions augment;
  int64_t image_size = 224;
  std::vector<double> class_weights;  // empty: unweighted
  double label_smoothing = 0;         // train.label_smoothing
  double mixup = 0;                   // aug.mixup: Beta(a, a)'s a; 0: off
  int64_t threads = 1;                // augmenting threads per rank
  // Evaluation only: each image's probabilities averaged with those of its
  // horizontal mirror (test-time augmentation).
  bool eval_hflip = false;
  // Evaluation only: the softmax temperature (metrics/temperature.h) its
  // probabilities are at: the model file's, or 1.
  double temperature = 1.0;
};

// Per-class weights n / (k * n_c) over the samples' labels, as scikit-learn's
// compute_class_weight("balanced"); a class without samples gets 0.
std::vector<double> balanced_class_weights(const std::vector<Sample>& samples, int64_t num_classes);

class CarotidTask : public tandem::Task {
 public:
  CarotidTask(TaskOptions options, const ImageStore& store, std::vector<std::string> persons, std::vector<Sample> train,
              std::vector<Sample> eval);

  // What evaluation runs on: validation while training, then the test set.
  void set_eval(std::vector<Sample> eval);
  void set_temperature(double temperature) { options_.temperature = temperature; }

  std::shared_ptr<torch::nn::Module> build_model() override;
  tandem::Activations activation_bytes(const tandem::ActivationQuery& query) const override {
    return options_.model.resnet.activation_bytes(query, options_.image_size);
  }
  bool fixed_shapes() const override { return true; }  // images of one size
  int64_t train_size() const override { return static_cast<int64_t>(train_.size()); }
  int64_t eval_size() const override { return static_cast<int64_t>(eval_.size()); }
  tandem::Batch make_batch(const std::vector<int64_t>& indices, bool train, uint64_t seed) override;
  tandem::Loss loss(torch::nn::Module& model, const tandem::Batch& batch) override;
  // tandem::classification_rows' "prob" [N, K], "pred", "label" and "loss"
  // at the options' temperature, "logit" (before it: what a temperature is
  // fitted on) and "sample": the report's confusion matrix and ROC curve
  // come from them.
  tandem::EvalRows eval_rows(torch::nn::Module& model, const tandem::Batch& batch) override;
  tandem::Metrics eval_metrics(const tandem::EvalRows& rows) override;
  std::vector<std::string> metric_names() const override;
  std::string metric_mode(const std::string& name) const override;

  // The batch's normalised float images, as the model takes them:
  // batch["image"], or batch["image_u8"] normalised where it lies.
  at::Tensor image_of(const tandem::Batch& batch);

 private:
  TaskOptions options_;
  const ImageStore& store_;
  std::vector<std::string> persons_;
  std::vector<Sample> train_, eval_;
  at::Tensor mean_, std_, class_weights_;
  // The normalisation's mean and std on the model's device, for the batches
  // that travel as uint8 (image_of); mean_ and std_ stay on the host for the
  // loader threads.
  at::Tensor device_scale_, device_mean_, device_std_;
  // Training images augmented and normalised on the loader's threads: raw[k]
  // is sample indices[k]'s image; with mixup, raw[n + k] is its partner's.
  at::Tensor augmented(const std::vector<at::Tensor>& raw, const std::vector<int64_t>& indices,
                       const std::vector<tandem::MixupDraw>& mixes, uint64_t seed) const;
};

// A [N, K] tensor as N rows of K doubles.
std::vector<std::vector<double>> table_rows(const at::Tensor& t);

// Each person's mean probabilities over its images among evaluation rows
// ("prob", and "sample" indexing `samples`), with its label.
PersonScores person_scores(const tandem::EvalRows& rows, const std::vector<Sample>& samples,
                           const std::vector<std::string>& persons);

// The metrics of evaluation rows ("prob", "label", "sample" indexing
// `samples`): "loss", then image_* and person_* of BinaryMetrics::named() (two
// classes) or MulticlassMetrics::named(), less their counts and loss.
tandem::Metrics classification_metrics(const tandem::EvalRows& rows, const std::vector<Sample>& samples,
                                       const std::vector<std::string>& persons);
// The names classification_metrics gives for `classes` classes, before any
// evaluation (rows with a "loss").
std::vector<std::string> classification_metric_names(int64_t classes);

}  // namespace carotid
