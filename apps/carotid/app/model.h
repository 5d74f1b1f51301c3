#pragma once
// The classifier a run trains or a prediction uses: a ResNet from libcore/nn
// shaped by the model.* keys and the data, with its starting weights (random,
// torchvision weights in safetensors, or an earlier run's model file).
#include <cstdint>
#include <string>
#include <vector>

#include "app/image_settings.h"
#include "tandem/config/settings.h"
#include "tandem/nn/resnet.h"

namespace carotid {

// The model.* keys, each declared once (tandem/config/settings.h).
struct ModelKeys {
  int64_t depth = 18;
  std::string stem = "auto";
  double dropout = 0.0;
  bool channels_last = true;
  std::string init_from, load;
  std::vector<std::string> classes;
  std::string threshold = "youden";

  template <class Self, class Visit>
  static void each_key(Self& k, Visit&& visit) {
    using tandem::any;
    visit("model.depth", k.depth, "ResNet depth: 18 or 34", tandem::one_of_counts({18, 34}));
    visit("model.stem", k.stem,
          "first layers: imagenet (7x7 stride-2 conv and max-pool, for 224 pixels), small (3x3 "
          "stride-1 conv, no pool, for 28-64 pixels); auto: small below 96 pixels",
          tandem::one_of({"auto", "imagenet", "small"}));
    visit("model.dropout", k.dropout, "dropout before the classifier", tandem::fraction());
    visit("model.channels_last", k.channels_last,
          "convolutions on channels-last (NHWC) tensors: faster on CPUs (oneDNN) and on GPUs under fp16/bf16 "
          "(false for fp32 on an older GPU if it is slower there); the same values either way",
          any());
    visit("model.init_from", k.init_from,
          "\"safetensors:FILE\": start from torchvision-named weights (the classifier is kept "
          "when its shape matches); empty: random",
          any());
    visit("model.load", k.load,
          "a models/*.h5 of an earlier run to continue from; that run's split.csv is reused so no "
          "test person reaches training",
          any());
    visit("model.classes", k.classes,
          "class names in label order; set by train from the label sheet, kept in the model file "
          "so predict names its columns",
          any());
    visit("model.threshold", k.threshold,
          "two classes: the decision threshold on P(class 1), chosen on the validation persons after training and "
          "kept in best_model.h5: youden (max sensitivity + specificity - 1), sensitivity=S, or a number",
          any());
  }
};

// The decision threshold `train` kept in each model file (0.5 for a file
// from before it did, or none there), averaged: an ensemble decides at its
// models' mean.
double kept_threshold(const std::vector<std::string>& model_files);

// calibrate.*, declared once.
struct CalibrateKeys {
  std::string temperature = "none";

  template <class Self, class Visit>
  static void each_key(Self& k, Visit&& visit) {
    visit("calibrate.temperature", k.temperature,
          "the softmax temperature of the model's probabilities (metrics/temperature.h): fit (on the validation "
          "images' NLL after training, the best model's, before the threshold is chosen; better calibrated images, "
          "worse calibrated persons on BreastMNIST, docs/carotid.md), none (1), or a number; kept in the model "
          "file, which predict and every report apply",
          tandem::any());
  }
};

struct ModelOptions {
  tandem::nn::ResNetOptions resnet;
  std::string init_from;  // a safetensors file, or empty
  std::string load;       // a model or checkpoint .h5 (its "model" set), or empty
};

// From model.*, data.channels and data.image_size: read_keys of the user's
// config for train, read_fields of a model file's for predict. "auto" stem
// resolved. Throws UsageError for an init_from without the "safetensors:"
// prefix.
ModelOptions model_options(const ModelKeys& model, const ImageKeys& image, int64_t num_classes);

// A model with the spec's starting weights, on the CPU. Throws UsageError
// naming the file when weights are missing, unreadable or of another shape.
// `quiet` leaves out the log line about what was loaded.
tandem::nn::ResNet build_classifier(const ModelOptions& spec, bool quiet = false);

// The temperature a model file keeps (its "temperature"), or 1 for a file
// without one.
double kept_temperature(const std::string& model_file);

}  // namespace carotid
