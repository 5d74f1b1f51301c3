#pragma once
// ResNet-18 and ResNet-34 (He et al. 2015, BasicBlock), built as torchvision
// builds them so that torchvision's weights load by name (nn/init_from.h): the
// image classifier of apps/carotid, and the judge of generated images in
// apps/vavae. A "small" stem serves the 28-64 pixel images of MedMNIST-like
// data, where the ImageNet stem would shrink the image to nothing.
#include <torch/nn/module.h>
#include <torch/nn/modules/batchnorm.h>
#include <torch/nn/modules/container/sequential.h>
#include <torch/nn/modules/conv.h>
#include <torch/nn/modules/dropout.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/pimpl.h>

#include <cstdint>
#include <string>

#include "tandem/train/activations.h"

namespace tandem::nn {

struct ResNetOptions {
  int64_t depth = 18;  // 18 or 34: BasicBlocks in stages of {2,2,2,2} or {3,4,6,3}
  int64_t in_channels = 3;
  int64_t num_classes = 1000;
  // Before the final fc, only when training. A parameter-free module, so the
  // state_dict names stay torchvision's.
  double dropout = 0.0;
  // "imagenet": torchvision's stem (7x7 stride-2 conv1, 3x3 stride-2 maxpool),
  // for 224-pixel inputs. "small": 3x3 stride-1 conv1 and no maxpool, as
  // MedMNIST/CIFAR ResNets use for 28-64 pixel inputs (a 28x28 image would
  // otherwise be 1x1 after layer3).
  std::string stem = "imagenet";
  // Convolution weights, and the images, in channels-last (NHWC) memory
  // order: oneDNN's convolutions on CPU, and cuDNN's tensor-core ones under
  // fp16/bf16, run on NHWC without reordering. The values are the same.
  bool channels_last = false;

  // Throws UsageError naming the key (model.depth, model.stem, ...) and what
  // it accepts.
  void validate() const;

  // The side of layer4's map (feature_map) on images of `size` pixels: 1
  // for the ImageNet stem at 28 pixels, where a Grad-CAM map has nothing to
  // show (nn/grad_cam.h).
  int64_t feature_map_side(int64_t size) const;

  // What training keeps for backward (Task::activation_bytes) on images of
  // `size` x `size` pixels, and what evaluating them holds at once.
  Activations activation_bytes(const ActivationQuery& query, int64_t size) const;
};

// Two 3x3 convolutions with a shortcut; a 1x1 strided convolution
// ("downsample") on the shortcut where the block changes size or width.
class BasicBlockImpl : public torch::nn::Module {
 public:
  BasicBlockImpl(int64_t in_planes, int64_t planes, int64_t stride);
  at::Tensor forward(const at::Tensor& x);

  torch::nn::Conv2d conv1{nullptr};
  torch::nn::BatchNorm2d bn1{nullptr};
  torch::nn::Conv2d conv2{nullptr};
  torch::nn::BatchNorm2d bn2{nullptr};
  torch::nn::Sequential downsample{nullptr};  // null where the shortcut is the identity
};
TORCH_MODULE(BasicBlock);

// Parameters and buffers are named exactly as torchvision's resnet18/34
// state_dict: conv1.weight, bn1.{weight,bias,running_mean,running_var,
// num_batches_tracked}, layer1.0.conv1.weight, layer2.0.downsample.0.weight,
// layer2.0.downsample.1.*, ..., fc.weight, fc.bias. Initialised as torchvision
// does, from the global generator (torch::manual_seed): convolutions
// kaiming_normal_(fan_out, relu), BatchNorm weight 1 and bias 0, fc as a
// default Linear; the last BatchNorm of a block is not zeroed
// (zero_init_residual = false).
class ResNetImpl : public torch::nn::Module {
 public:
  // Throws UsageError from options.validate().
  explicit ResNetImpl(const ResNetOptions& options);

  at::Tensor forward(const at::Tensor& x);      // [N,C,H,W] -> logits [N,num_classes]
  at::Tensor features(const at::Tensor& x);     // [N,512] after global average pooling (before dropout and fc)
  at::Tensor feature_map(const at::Tensor& x);  // layer4's output [N,512,h,w], before pooling (nn/grad_cam.h)
  at::Tensor classify(const at::Tensor& map);   // feature_map's output -> logits: pooling, dropout, fc
  const ResNetOptions& options() const { return options_; }

  torch::nn::Conv2d conv1{nullptr};
  torch::nn::BatchNorm2d bn1{nullptr};
  torch::nn::Sequential layer1{nullptr}, layer2{nullptr}, layer3{nullptr}, layer4{nullptr};  // BasicBlocks
  torch::nn::Dropout dropout{nullptr};
  torch::nn::Linear fc{nullptr};

 private:
  ResNetOptions options_;
};
TORCH_MODULE(ResNet);

}  // namespace tandem::nn
