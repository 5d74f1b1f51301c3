#include "app/model.h"

#include <torch/torch.h>

#include <filesystem>

#include "app/image_settings.h"
#include "tandem/config/config.h"
#include "tandem/error.h"
#include "tandem/io/checkpoint.h"
#include "tandem/io/h5file.h"
#include "tandem/nn/init_from.h"
#include "tandem/obs/log.h"

namespace carotid {

namespace {

// Below this size the ImageNet stem would shrink a 28-pixel image to 7 pixels
// before the first block, and to 1 pixel by layer4.
constexpr int64_t kSmallStemBelow = 96;

}  // namespace

ModelOptions model_options(const ModelKeys& k, const ImageKeys& image, int64_t num_classes) {
  ModelOptions spec;
  spec.resnet.depth = k.depth;
  spec.resnet.in_channels = image.store.channels;
  spec.resnet.num_classes = num_classes;
  spec.resnet.dropout = k.dropout;
  spec.resnet.channels_last = k.channels_last;
  spec.resnet.stem = k.stem != "auto" ? k.stem : image.store.size < kSmallStemBelow ? "small" : "imagenet";
  const std::string& init = k.init_from;
  const std::string prefix = "safetensors:";
  if (!init.empty()) {
    if (init.rfind(prefix, 0) != 0)
      throw tandem::UsageError("model.init_from must be \"safetensors:FILE\", not \"" + init + "\"");
    spec.init_from = init.substr(prefix.size());
  }
  spec.load = k.load;
  return spec;
}

tandem::nn::ResNet build_classifier(const ModelOptions& spec, bool quiet) {
  tandem::nn::ResNet model(spec.resnet);
  if (!spec.load.empty()) {
    const auto ckpt = tandem::load_checkpoint(spec.load);
    tandem::restore(ckpt, "model", tandem::module_state(*model));
    if (!quiet) tandem::log::info("model: weights from ", spec.load);
  } else if (!spec.init_from.empty()) {
    tandem::nn::InitOptions options;
    options.may_differ = {"fc."};
    options.adapt_in_channels = {"conv1.weight"};
    const auto report = tandem::nn::init_from_safetensors(*model, spec.init_from, options);
    if (!quiet) tandem::log::info("model: ", spec.init_from, ": ", report.summary());
  }
  return model;
}

double kept_threshold(const std::vector<std::string>& model_files) {
  double sum = 0;
  for (const auto& file : model_files) {
    const bool kept = std::filesystem::is_regular_file(file) && tandem::H5File(file).has_attr("", "threshold");
    sum += kept ? tandem::H5File(file).attr_double("", "threshold") : 0.5;
  }
  return sum / static_cast<double>(model_files.size());
}

double kept_temperature(const std::string& model_file) {
  const tandem::H5File file(model_file);
  return file.has_attr("", "temperature") ? file.attr_double("", "temperature") : 1.0;
}

}  // namespace carotid
