#pragma once
// The classifier a run trains or a prediction uses: a ResNet from libcore/nn
// shaped by the model.* keys and the data, with its starting weights (random,
// torchvision weights in safetensors, or an earlier run's model file).
#include <cstdint>
#include <string>
#include <vector>

#include "tandem/nn/resnet.h"

namespace tandem {
class Config;
}  // namespace tandem

namespace carotid {

// The decision threshold `train` kept in each model file (0.5 for a file
// from before it did, or none there), averaged: an ensemble decides at its
// models' mean.
double kept_threshold(const std::vector<std::string>& model_files);

struct ModelSpec {
  tandem::nn::ResNetOptions resnet;
  std::string init_from;  // a safetensors file, or empty
  std::string load;       // a model or checkpoint .h5 (its "model" set), or empty
};

// `size` when the model can take images of it (16 to 4096 pixels square),
// else a UsageError naming `key`.
int64_t checked_image_size(int64_t size, const std::string& key);

// From model.*, data.channels and data.image_size; "auto" stem resolved.
// Throws UsageError for a depth other than 18/34 or an init_from without the
// "safetensors:" prefix.
ModelSpec model_spec(const tandem::Config& config, int64_t num_classes);

// A model with the spec's starting weights, on the CPU. Throws UsageError
// naming the file when weights are missing, unreadable or of another shape.
// `quiet` leaves out the log line about what was loaded.
tandem::nn::ResNet build_classifier(const ModelSpec& spec, bool quiet = false);

}  // namespace carotid
