#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "tandem/error.h"
#include "tandem/nn/resnet.h"
#include "../test_support.h"

namespace {

using tandem::nn::ResNet;
using tandem::nn::ResNetOptions;

ResNetOptions options(int64_t depth, int64_t in_channels, int64_t num_classes, const std::string& stem) {
  ResNetOptions o;
  o.depth = depth;
  o.in_channels = in_channels;
  o.num_classes = num_classes;
  o.stem = stem;
  return o;
}

// Every parameter and buffer by name, as torchvision's state_dict lists them.
std::map<std::string, std::vector<int64_t>> state_shapes(ResNet& model) {
  std::map<std::string, std::vector<int64_t>> shapes;
  for (const auto& p : model->named_parameters()) shapes[p.key()] = p.value().sizes().vec();
  for (const auto& b : model->named_buffers()) shapes[b.key()] = b.value().sizes().vec();
  return shapes;
}

int64_t parameter_count(ResNet& model) {
  int64_t n = 0;
  for (const auto& p : model->parameters()) n += p.numel();
  return n;
}

// Deterministic, not-too-coherent values for every tensor (golden-angle
// phases), the same rule as the torchvision script that produced the
// reference logits below:
//   for t, name in enumerate(sorted(sd)): s = sin(arange(numel) * 2.3999632 + 1.3 t)
//   running_var 1 + s^2/2; weights of 2+ dims s sqrt(3 / fan_in); other
//   weights 1 + s/5; biases and running_mean s/10; num_batches_tracked left.
void fill_for_reference(ResNet& model) {
  std::map<std::string, at::Tensor> state;
  for (const auto& p : model->named_parameters()) state[p.key()] = p.value();
  for (const auto& b : model->named_buffers()) state[b.key()] = b.value();
  torch::NoGradGuard no_grad;
  int64_t t = 0;
  for (auto& [key, v] : state) {
    const std::string& name = key;  // clang 14 lambdas cannot capture a structured binding
    const auto ends = [&](const std::string& suffix) {
      return name.size() >= suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0;
    };
    const double phase = 1.3 * static_cast<double>(t++);
    if (ends("num_batches_tracked")) continue;
    const at::Tensor s = (torch::arange(v.numel(), torch::kDouble) * 2.3999632 + phase).sin().reshape(v.sizes());
    at::Tensor w;
    if (ends("running_var"))
      w = 1 + 0.5 * s * s;
    else if (v.dim() >= 2)
      w = s * std::sqrt(3.0 / static_cast<double>(v[0].numel()));
    else if (ends("weight"))
      w = 1 + 0.2 * s;
    else
      w = 0.1 * s;
    v.copy_(w);
  }
}

void expect_close(const at::Tensor& actual, const at::Tensor& expected, double tolerance) {
  ASSERT_EQ(actual.sizes(), expected.sizes());
  EXPECT_TRUE(torch::allclose(actual, expected, tolerance, tolerance))
      << "max difference " << (actual - expected).abs().max().item<double>() << "\n"
      << actual << "\n"
      << expected;
}

TEST(ResnetArchitecture, ParameterCountsAreTorchvisions) {
  ResNet r18(options(18, 3, 1000, "imagenet"));
  ResNet r34(options(34, 3, 1000, "imagenet"));
  EXPECT_EQ(parameter_count(r18), 11689512);  // torchvision.models.resnet18()
  EXPECT_EQ(parameter_count(r34), 21797672);  // torchvision.models.resnet34()
}

TEST(ResnetArchitecture, StateDictIsTorchvisions) {
  ResNet model(options(18, 3, 1000, "imagenet"));
  const auto shapes = state_shapes(model);
  // 62 parameters: conv1 + bn1 (3), 8 blocks of 6, 3 downsamples of 3, fc (2);
  // 60 buffers: 3 for each of 20 BatchNorms.
  EXPECT_EQ(model->parameters().size(), 62u);
  EXPECT_EQ(model->buffers().size(), 60u);
  EXPECT_EQ(shapes.size(), 122u);
  const std::map<std::string, std::vector<int64_t>> expected = {
      {"conv1.weight", {64, 3, 7, 7}},
      {"bn1.weight", {64}},
      {"bn1.bias", {64}},
      {"bn1.running_mean", {64}},
      {"bn1.running_var", {64}},
      {"bn1.num_batches_tracked", {}},
      {"layer1.0.conv1.weight", {64, 64, 3, 3}},
      {"layer1.1.bn2.bias", {64}},
      {"layer2.0.conv1.weight", {128, 64, 3, 3}},
      {"layer2.0.conv2.weight", {128, 128, 3, 3}},
      {"layer2.0.downsample.0.weight", {128, 64, 1, 1}},
      {"layer2.0.downsample.1.weight", {128}},
      {"layer2.0.downsample.1.running_var", {128}},
      {"layer2.0.downsample.1.num_batches_tracked", {}},
      {"layer3.0.downsample.0.weight", {256, 128, 1, 1}},
      {"layer4.0.downsample.0.weight", {512, 256, 1, 1}},
      {"layer4.1.conv2.weight", {512, 512, 3, 3}},
      {"layer4.1.bn2.running_mean", {512}},
      {"fc.weight", {1000, 512}},
      {"fc.bias", {1000}},
  };
  for (const auto& [name, shape] : expected) {
    const auto it = shapes.find(name);
    ASSERT_NE(it, shapes.end()) << name;
    EXPECT_EQ(it->second, shape) << name;
  }
  for (const char* absent : {"layer1.0.downsample.0.weight", "layer2.1.downsample.0.weight", "dropout.weight"})
    EXPECT_EQ(shapes.count(absent), 0u) << absent;

  ResNet r34(options(34, 3, 1000, "imagenet"));
  EXPECT_EQ(state_shapes(r34).size(), 218u);  // torchvision resnet34's state_dict
  EXPECT_EQ(state_shapes(r34).count("layer3.5.bn2.weight"), 1u);
}

TEST(ResnetArchitecture, InitialisedAsTorchvision) {
  torch::manual_seed(0);
  ResNet model(options(18, 3, 10, "imagenet"));
  // kaiming_normal_(fan_out, relu): std sqrt(2 / (out * kh * kw)).
  const double conv1_std = std::sqrt(2.0 / (64 * 7 * 7));
  EXPECT_NEAR(model->conv1->weight.std().item<double>(), conv1_std, 0.03 * conv1_std);
  const double layer4_std = std::sqrt(2.0 / (512 * 3 * 3));
  EXPECT_NEAR(model->named_parameters()["layer4.1.conv2.weight"].std().item<double>(), layer4_std, 0.01 * layer4_std);
  EXPECT_TRUE(torch::equal(model->named_parameters()["layer4.1.bn2.weight"], torch::ones({512})));
  EXPECT_TRUE(torch::equal(model->named_parameters()["layer4.1.bn2.bias"], torch::zeros({512})));
  // Linear's default: uniform in +-1/sqrt(fan_in).
  EXPECT_LE(model->fc->weight.abs().max().item<double>(), 1.0 / std::sqrt(512.0));
  EXPECT_GT(model->fc->weight.abs().max().item<double>(), 0.9 / std::sqrt(512.0));
}

// Logits from torchvision 0.14 (resnet18(num_classes=5), and resnet34 with
// conv1 = Conv2d(1, 64, 3, 1, 1) and maxpool = Identity) in eval mode, with
// the weights of fill_for_reference.
TEST(ResnetReference, Resnet18ImagenetStemMatchesTorchvision) {
  ResNet model(options(18, 3, 5, "imagenet"));
  fill_for_reference(model);
  model->eval();
  const at::Tensor x =
      (torch::arange(2 * 3 * 64 * 64, torch::kDouble).square() * 1e-3).sin().to(torch::kFloat).reshape({2, 3, 64, 64});
  const at::Tensor expected = torch::tensor({1.51185238, -3.88277411, 5.55905867, -6.27497435, 5.93111563,  //
                                             1.43526208, -3.79304218, 5.47166824, -6.20500326, 5.89063787})
                                  .to(torch::kFloat)
                                  .reshape({2, 5});
  torch::NoGradGuard no_grad;
  expect_close(model->forward(x), expected, 1e-4);
}

TEST(ResnetReference, Resnet34SmallStemMatchesTorchvision) {
  ResNet model(options(34, 1, 3, "small"));
  fill_for_reference(model);
  model->eval();
  const at::Tensor x = (torch::arange(28 * 28, torch::kDouble) * 0.05).cos().to(torch::kFloat).reshape({1, 1, 28, 28});
  const at::Tensor expected = torch::tensor({-3.19915819, 3.31407857, -2.88185740}).to(torch::kFloat).reshape({1, 3});
  torch::NoGradGuard no_grad;
  expect_close(model->forward(x), expected, 1e-4);
}

TEST(ResnetShapes, SmallStemOn28PixelGrayImages) {
  ResNet model(options(18, 1, 2, "small"));
  model->eval();
  torch::NoGradGuard no_grad;
  const at::Tensor x = torch::randn({4, 1, 28, 28});
  EXPECT_EQ(model->forward(x).sizes(), (std::vector<int64_t>{4, 2}));
  EXPECT_EQ(model->features(x).sizes(), (std::vector<int64_t>{4, 512}));
  EXPECT_EQ(model->conv1->weight.sizes(), (std::vector<int64_t>{64, 1, 3, 3}));
}

TEST(ResnetShapes, ImagenetStemOn224PixelImages) {
  ResNet model(options(18, 3, 2, "imagenet"));
  model->eval();
  torch::NoGradGuard no_grad;
  const at::Tensor x = torch::randn({1, 3, 224, 224});
  const at::Tensor features = model->features(x);
  EXPECT_EQ(features.sizes(), (std::vector<int64_t>{1, 512}));
  EXPECT_EQ(model->forward(x).sizes(), (std::vector<int64_t>{1, 2}));
  // forward is fc on the features (no dropout in eval).
  expect_close(model->forward(x), model->fc(features), 1e-6);
}

TEST(ResnetEval, DeterministicAndPerSample) {
  torch::manual_seed(3);
  ResNetOptions with_dropout = options(18, 1, 2, "small");
  with_dropout.dropout = 0.5;
  ResNet model(with_dropout);
  torch::manual_seed(3);
  ResNet plain(options(18, 1, 2, "small"));
  model->eval();
  plain->eval();
  torch::NoGradGuard no_grad;
  const at::Tensor x = torch::randn({3, 1, 16, 16});
  const at::Tensor y = model->forward(x);
  EXPECT_TRUE(torch::equal(model->forward(x), y));
  // Eval BatchNorm uses running statistics: a sample does not depend on its batch.
  expect_close(model->forward(x.narrow(0, 1, 1)), y.narrow(0, 1, 1), 1e-5);
  // Dropout is off in eval: the same weights (same seed) give the same logits.
  expect_close(plain->forward(x), y, 1e-6);
}

TEST(ResnetTraining, LossFallsAndEveryParameterLearns) {
  torch::manual_seed(4);
  ResNet model(options(18, 1, 2, "small"));
  model->train();
  const at::Tensor x = torch::randn({8, 1, 16, 16});
  const at::Tensor y = torch::tensor({0, 1, 0, 1, 0, 1, 0, 1}, torch::kLong);
  torch::optim::Adam optimizer(model->parameters(), torch::optim::AdamOptions(1e-3));
  std::vector<double> losses;
  for (int step = 0; step < 6; ++step) {
    optimizer.zero_grad();
    const at::Tensor loss = torch::nn::functional::cross_entropy(model->forward(x), y);
    loss.backward();
    if (step == 0) {
      for (const auto& p : model->named_parameters()) {
        ASSERT_TRUE(p.value().grad().defined()) << p.key();
        EXPECT_GT(p.value().grad().abs().sum().item<double>(), 0.0) << p.key();
      }
    }
    optimizer.step();
    losses.push_back(loss.item<double>());
  }
  EXPECT_LT(losses.back(), 0.1 * losses.front()) << losses.front() << " -> " << losses.back();
  EXPECT_EQ(model->named_buffers()["layer3.1.bn2.num_batches_tracked"].item<int64_t>(), 6);
}

// model.channels_last changes where the numbers sit, not what they are: the
// same seed gives the same weights, and logits and gradients agree with the
// same network's in float64 (NCHW), with NHWC weights and gradients. Float32
// rounding moves a few activations across a ReLU's kink, which changes a few
// gradient entries outright, so gradients are compared by their relative
// norm: 1e-6 to 3e-3 off float64's in either layout (measured; it varies with
// the kernels picked at run time), where one read in the wrong order would be
// off by about 1.
TEST(ResnetChannelsLast, SameLogitsAndGradientsInNhwcOrder) {
  ResNetOptions nhwc = options(18, 3, 2, "small");
  nhwc.channels_last = true;
  torch::manual_seed(5);
  ResNet exact(options(18, 3, 2, "small"));
  exact->to(torch::kDouble);
  torch::manual_seed(5);
  ResNet last(nhwc);
  const at::Tensor x = torch::randn({4, 3, 20, 20});
  const at::Tensor y = torch::tensor({0, 1, 1, 0}, torch::kLong);
  const at::Tensor want = exact->forward(x.to(torch::kDouble));
  torch::nn::functional::cross_entropy(want, y).backward();
  const at::Tensor logits = last->forward(x);
  torch::nn::functional::cross_entropy(logits, y).backward();
  expect_close(logits.to(torch::kDouble), want, 1e-4);
  const auto exact_params = exact->named_parameters();
  for (const auto& p : last->named_parameters()) {
    const at::Tensor& w = exact_params[p.key()];
    EXPECT_TRUE(torch::equal(p.value().to(torch::kDouble), w)) << p.key();
    const double off = (p.value().grad().to(torch::kDouble) - w.grad()).norm().item<double>();
    EXPECT_LT(off, 1e-2 * w.grad().norm().item<double>()) << p.key();
    if (p.value().dim() == 4) EXPECT_TRUE(p.value().is_contiguous(at::MemoryFormat::ChannelsLast)) << p.key();
  }
}

TEST(ResnetOptions, BadValuesNameTheKey) {
  using tandem::UsageError;
  using tandem::testing::message_of;
  ResNetOptions deep = options(50, 3, 10, "imagenet");
  EXPECT_NE(message_of<UsageError>([&] { ResNet model(deep); }).find("model.depth"), std::string::npos);
  ResNetOptions stem = options(18, 3, 10, "tiny");
  EXPECT_NE(message_of<UsageError>([&] { ResNet model(stem); }).find("model.stem"), std::string::npos);
  ResNetOptions classes = options(18, 3, 0, "small");
  EXPECT_NE(message_of<UsageError>([&] { ResNet model(classes); }).find("model.num_classes"), std::string::npos);
  ResNetOptions dropout = options(18, 3, 10, "small");
  dropout.dropout = 1.0;
  EXPECT_NE(message_of<UsageError>([&] { ResNet model(dropout); }).find("model.dropout"), std::string::npos);
}

}  // namespace
