#include "tandem/nn/resnet.h"

#include <torch/torch.h>

#include <algorithm>
#include <array>
#include <string>

#include "tandem/error.h"
#include "tandem/nn/recompute.h"

namespace tandem::nn {

namespace F = torch::nn::functional;

namespace {

torch::nn::Conv2d conv(int64_t in, int64_t out, int64_t kernel, int64_t stride) {
  return torch::nn::Conv2d(torch::nn::Conv2dOptions(in, out, kernel).stride(stride).padding(kernel / 2).bias(false));
}

std::array<int64_t, 4> blocks_per_stage(int64_t depth) {
  return depth == 18 ? std::array<int64_t, 4>{2, 2, 2, 2} : std::array<int64_t, 4>{3, 4, 6, 3};
}

}  // namespace

void ResNetOptions::validate() const {
  if (depth != 18 && depth != 34) {
    throw UsageError("model.depth: ResNet depth must be 18 or 34, got " + std::to_string(depth));
  }
  if (in_channels < 1) throw UsageError("model.in_channels: must be positive, got " + std::to_string(in_channels));
  if (num_classes < 1) throw UsageError("model.num_classes: must be positive, got " + std::to_string(num_classes));
  if (!(dropout >= 0 && dropout < 1))
    throw UsageError("model.dropout: must be in [0, 1), got " + std::to_string(dropout));
  if (stem != "imagenet" && stem != "small") {
    throw UsageError("model.stem: must be \"imagenet\" (224-pixel inputs) or \"small\" (28-64 pixels), got \"" + stem +
                     "\"");
  }
}

Activations ResNetOptions::activation_bytes(const ActivationQuery& q, int64_t size) const {
  const auto conv_out = [](int64_t side, int64_t kernel, int64_t stride) {
    return (side + 2 * (kernel / 2) - kernel) / stride + 1;
  };
  const int64_t n = q.micro_batch, e = q.element_bytes;
  // The stem: the image (conv1's input), conv1's output (batch norm's) and
  // the ReLU's; ImageNet's max-pool keeps an int64 index per output.
  int64_t side = stem == "small" ? size : conv_out(size, 7, 2);
  int64_t bytes = n * (in_channels * size * size + 2 * 64 * side * side) * e;
  const int64_t stem_bytes = bytes;
  if (stem == "imagenet") {
    side = (side + 2 - 3) / 2 + 1;
    bytes += n * 64 * side * side * 8;
  }
  // A BasicBlock keeps four maps of its output's size (each convolution's
  // output for its batch norm, each ReLU's output), a fifth where a
  // downsampling convolution feeds its batch norm; its input is the previous
  // block's last map. A stage under recomputation keeps only its input, and
  // the largest stage lives again while it runs backward.
  //
  // Backward begins with the last stage (three quarters of ResNet-18's
  // weights) and fc, whose gradients exist while every earlier stage's
  // activations still do.
  const auto blocks = blocks_per_stage(depth);
  const int64_t last_stage = 512 * 256 * 9 + 512 * 512 * 9 * (2 * blocks[3] - 1) + 512 * 256 + 2 * 512 * (2 * blocks[3] + 1);
  const int64_t early_gradients = (last_stage + 512 * num_classes + num_classes) * 4;
  // The first stage's input is the stem's ReLU, counted above, or the pool's.
  int64_t stages = 0, largest = 0, largest_map = 0, inputs = stem == "imagenet" ? n * 64 * side * side * e : 0;
  for (size_t s = 0; s < 4; ++s) {
    const int64_t planes = int64_t{64} << s;
    if (s > 0) side = conv_out(side, 3, 2);
    const int64_t map = n * planes * side * side * e;
    const int64_t stage = (4 * blocks[s] + (s > 0 ? 1 : 0)) * map;
    stages += stage;
    largest = std::max(largest, stage);
    largest_map = std::max(largest_map, map);
    if (s < 3) inputs += map;
  }
  // Evaluating, nothing kept for backward: the stem's image and maps, or a
  // block's input beside its convolutions' outputs, a batch norm's and a
  // downsampling branch's (the ReLUs and the residual sum work in place).
  const int64_t evaluation = std::max(stem_bytes, 5 * largest_map);
  const std::string by = "the forward of a micro-batch of " + std::to_string(n) + " images";
  if (q.recompute) return {bytes + inputs + early_gradients, bytes + inputs + largest, evaluation, by};
  return {bytes + stages + early_gradients, 0, evaluation, by};
}

BasicBlockImpl::BasicBlockImpl(int64_t in_planes, int64_t planes, int64_t stride) {
  conv1 = register_module("conv1", conv(in_planes, planes, 3, stride));
  bn1 = register_module("bn1", torch::nn::BatchNorm2d(planes));
  conv2 = register_module("conv2", conv(planes, planes, 3, 1));
  bn2 = register_module("bn2", torch::nn::BatchNorm2d(planes));
  if (stride != 1 || in_planes != planes) {
    downsample = register_module(
        "downsample", torch::nn::Sequential(conv(in_planes, planes, 1, stride), torch::nn::BatchNorm2d(planes)));
  }
}

at::Tensor BasicBlockImpl::forward(const at::Tensor& x) {
  at::Tensor out = bn1(conv1(x)).relu_();
  out = bn2(conv2(out));
  // In place, as torchvision's `out += identity` and ReLU(inplace=True): two
  // fewer activation-sized tensors per block, which bounds the batch on a GPU.
  out += downsample ? downsample->forward(x) : x;
  return out.relu_();
}

ResNetImpl::ResNetImpl(const ResNetOptions& options) : options_(options) {
  options_.validate();
  const bool small = options_.stem == "small";
  conv1 = register_module("conv1", small ? conv(options_.in_channels, 64, 3, 1) : conv(options_.in_channels, 64, 7, 2));
  bn1 = register_module("bn1", torch::nn::BatchNorm2d(64));

  const auto blocks = blocks_per_stage(options_.depth);
  torch::nn::Sequential* stages[] = {&layer1, &layer2, &layer3, &layer4};
  int64_t in_planes = 64;
  for (size_t s = 0; s < 4; ++s) {
    const int64_t planes = int64_t{64} << s;
    torch::nn::Sequential stage;
    for (int64_t b = 0; b < blocks[s]; ++b) {
      stage->push_back(BasicBlock(in_planes, planes, b == 0 && s > 0 ? 2 : 1));
      in_planes = planes;
    }
    *stages[s] = register_module("layer" + std::to_string(s + 1), stage);
  }
  dropout = register_module("dropout", torch::nn::Dropout(options_.dropout));
  fc = register_module("fc", torch::nn::Linear(512, options_.num_classes));

  // BatchNorm (ones and zeros) and fc (torch.nn.Linear's default) are already
  // initialised as torchvision leaves them; only the convolutions differ.
  torch::NoGradGuard no_grad;
  for (auto& module : modules(/*include_self=*/false)) {
    if (auto* c = module->as<torch::nn::Conv2d>()) {
      torch::nn::init::kaiming_normal_(c->weight, 0.0, torch::kFanOut, torch::kReLU);
      if (options_.channels_last) c->weight.set_data(c->weight.contiguous(at::MemoryFormat::ChannelsLast));
    }
  }
}

int64_t ResNetOptions::feature_map_side(int64_t size) const {
  // Every stride-2 step (a 7x7 or 3x3 convolution or max-pool, padded to
  // keep the centre) maps a side s to (s - 1) / 2 + 1: conv1 and the
  // max-pool for the ImageNet stem, then layer2, layer3 and layer4.
  const int halvings = stem == "imagenet" ? 5 : 3;
  for (int i = 0; i < halvings; ++i) size = (size - 1) / 2 + 1;
  return size;
}

at::Tensor ResNetImpl::feature_map(const at::Tensor& x) {
  at::Tensor h = bn1(conv1(options_.channels_last ? x.contiguous(at::MemoryFormat::ChannelsLast) : x)).relu_();
  if (options_.stem == "imagenet") h = F::max_pool2d(h, F::MaxPool2dFuncOptions(3).stride(2).padding(1));
  for (torch::nn::Sequential stage : {layer1, layer2, layer3, layer4})
    h = recomputed(*stage, [stage](const at::Tensor& x, const at::Tensor&) mutable { return stage->forward(x); }, h);
  return h;
}

namespace {

at::Tensor pooled(const at::Tensor& map) {
  return F::adaptive_avg_pool2d(map, F::AdaptiveAvgPool2dFuncOptions(1)).flatten(1);
}

}  // namespace

at::Tensor ResNetImpl::features(const at::Tensor& x) { return pooled(feature_map(x)); }

at::Tensor ResNetImpl::classify(const at::Tensor& map) { return fc(dropout(pooled(map))); }

at::Tensor ResNetImpl::forward(const at::Tensor& x) { return classify(feature_map(x)); }

}  // namespace tandem::nn
