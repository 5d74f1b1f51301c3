#pragma once
// Starting a model from someone else's weights: a safetensors file (say
// torchvision's resnet18 converted) copied into any module by parameter and
// buffer name, for fine-tuning. Unlike restore() (io/checkpoint.h), which
// resumes our own runs and wants an exact match, this knows the differences
// fine-tuning brings: a new classifier head, and a first convolution that
// sees another number of input channels (gray images into an RGB network).
#include <torch/nn/module.h>

#include <string>
#include <vector>

namespace tandem::nn {

struct InitReport {
  std::vector<std::string> loaded;  // names
  std::vector<std::string>
      skipped;  // "name: why", e.g. "fc.weight: shape [1000,512] in file, [2,512] in model (kept as initialised)"
  std::vector<std::string> adapted;  // "name: how", e.g. "conv1.weight: 3 input channels summed into 1"
  // One log line: the count of each list and its first few names.
  std::string summary() const;
};

struct InitOptions {
  // Name prefixes (e.g. {"fc."}) whose tensors may differ in shape from the
  // file's or be absent from it: left as initialised, reported as skipped.
  // Typically the classifier head.
  std::vector<std::string> may_differ = {};
  // Exact names of first convolutions ([out, in, kh, kw]) whose input
  // channels may differ from the file's, adapted as timm's adapt_input_conv
  // does: 1 from any number by summing over them (a gray image then gives
  // what the original gives for that image repeated in every channel);
  // otherwise by repeating the file's channels cyclically and scaling by
  // file/model channels, so activations keep their size.
  std::vector<std::string> adapt_in_channels = {};
  // Tensors in the file that the model lacks are an error unless this is set
  // (then they are reported as skipped).
  bool allow_unexpected = false;
};

// Copies the file's tensors into the model's parameters and buffers of the
// same name, without recording gradients, converted to each target's dtype
// and device. Everything is checked first: nothing is copied unless all fits.
// Throws UsageError naming the file, with the first few names of each fault,
// when it cannot be read, a model tensor is absent from it, a shape differs
// outside may_differ and adapt_in_channels, or it holds tensors the model
// lacks (unless allow_unexpected). A BatchNorm counter (num_batches_tracked)
// absent from the file, as in files written without it, is skipped.
InitReport init_from_safetensors(torch::nn::Module& model, const std::string& path, const InitOptions& options = {});

}  // namespace tandem::nn
