#include "app/model.h"

#include <torch/torch.h>

#include <filesystem>

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

int64_t checked_image_size(int64_t size, const std::string& key) {
  if (size < 16 || size > 4096)
    throw tandem::UsageError(key + " must be between 16 and 4096 pixels, not " + std::to_string(size));
  return size;
}

ModelSpec model_spec(const tandem::Config& c, int64_t num_classes) {
  ModelSpec spec;
  spec.resnet.depth = c.get_int("model.depth");
  if (spec.resnet.depth != 18 && spec.resnet.depth != 34)
    throw tandem::UsageError("model.depth must be 18 or 34, not " + std::to_string(spec.resnet.depth));
  spec.resnet.in_channels = c.get_int("data.channels");
  if (spec.resnet.in_channels != 1 && spec.resnet.in_channels != 3)
    throw tandem::UsageError("data.channels must be 1 or 3, not " + std::to_string(spec.resnet.in_channels));
  const int64_t size = checked_image_size(c.get_int("data.image_size"), "data.image_size");
  spec.resnet.num_classes = num_classes;
  spec.resnet.dropout = c.get_double("model.dropout");
  if (spec.resnet.dropout < 0 || spec.resnet.dropout >= 1)
    throw tandem::UsageError("model.dropout must be in [0, 1), not " + std::to_string(spec.resnet.dropout));
  spec.resnet.channels_last = c.get_bool("model.channels_last");
  const std::string stem = c.get_string("model.stem");
  spec.resnet.stem = stem != "auto" ? stem : size < kSmallStemBelow ? "small" : "imagenet";
  const std::string init = c.get_string("model.init_from");
  const std::string prefix = "safetensors:";
  if (!init.empty()) {
    if (init.rfind(prefix, 0) != 0)
      throw tandem::UsageError("model.init_from must be \"safetensors:FILE\", not \"" + init + "\"");
    spec.init_from = init.substr(prefix.size());
  }
  spec.load = c.get_string("model.load");
  return spec;
}

tandem::nn::ResNet build_classifier(const ModelSpec& spec, bool quiet) {
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

}  // namespace carotid
