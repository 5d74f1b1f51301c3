#include <gtest/gtest.h>
#include <torch/torch.h>

#include <string>
#include <vector>

#include "tandem/error.h"
#include "tandem/io/safetensors.h"
#include "tandem/nn/init_from.h"
#include "tandem/nn/resnet.h"
#include "../test_support.h"

namespace {

using tandem::NamedTensors;
using tandem::UsageError;
using tandem::nn::InitOptions;
using tandem::nn::InitReport;
using tandem::nn::ResNet;
using tandem::nn::ResNetOptions;

using InitFromTest = tandem::testing::TempDirTest;

// Small and quick: 16x16 images through the small stem.
ResNet resnet(uint64_t seed, int64_t in_channels, int64_t num_classes) {
  torch::manual_seed(seed);
  ResNetOptions o;
  o.in_channels = in_channels;
  o.num_classes = num_classes;
  o.stem = "small";
  ResNet model(o);
  // One training-mode pass moves the running statistics off their initial
  // 0 and 1, so that loading them is seen in eval outputs.
  {
    torch::NoGradGuard no_grad;
    model->forward(torch::randn({4, in_channels, 16, 16}) * 2 + 1);
  }
  model->eval();
  return model;
}

NamedTensors state_of(ResNet& model) {
  NamedTensors state = tandem::named_tensors(model->named_parameters());
  for (const auto& b : model->named_buffers()) state.emplace_back(b.key(), b.value());
  return state;
}

NamedTensors without(const NamedTensors& state, const std::string& suffix) {
  NamedTensors out;
  for (const auto& [name, tensor] : state)
    if (name.size() < suffix.size() || name.compare(name.size() - suffix.size(), suffix.size(), suffix) != 0)
      out.emplace_back(name, tensor);
  return out;
}

at::Tensor logits(ResNet& model, const at::Tensor& x) {
  torch::NoGradGuard no_grad;
  return model->forward(x);
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

TEST_F(InitFromTest, RoundTripGivesTheSameModel) {
  ResNet source = resnet(1, 1, 2);
  tandem::write_safetensors(path("r18.safetensors"), state_of(source));
  ResNet fresh = resnet(2, 1, 2);
  const at::Tensor x = torch::randn({3, 1, 16, 16});
  ASSERT_FALSE(torch::allclose(logits(fresh, x), logits(source, x)));

  const InitReport report = tandem::nn::init_from_safetensors(*fresh, path("r18.safetensors"));
  EXPECT_EQ(report.loaded.size(), 122u);
  EXPECT_TRUE(report.skipped.empty());
  EXPECT_TRUE(report.adapted.empty());
  EXPECT_TRUE(torch::equal(logits(fresh, x), logits(source, x)));
  EXPECT_FALSE(fresh->conv1->weight.grad().defined());
  EXPECT_TRUE(fresh->conv1->weight.requires_grad());
}

TEST_F(InitFromTest, ConvertsDtypeForAnyModule) {
  torch::manual_seed(5);
  torch::nn::Linear linear(3, 2);
  const at::Tensor weight = torch::arange(6, torch::kDouble).reshape({2, 3}) / 8;  // exact in float
  tandem::write_safetensors(path("linear.safetensors"),
                            {{"weight", weight}, {"bias", torch::tensor({0.5, -0.25}, torch::kDouble)}});
  tandem::nn::init_from_safetensors(*linear, path("linear.safetensors"));
  EXPECT_EQ(linear->weight.scalar_type(), torch::kFloat);
  EXPECT_TRUE(torch::equal(linear->weight, weight.to(torch::kFloat)));
  EXPECT_TRUE(torch::equal(linear->bias, torch::tensor({0.5f, -0.25f})));
}

TEST_F(InitFromTest, NewHeadIsSkippedWhenItMayDiffer) {
  ResNet source = resnet(1, 1, 5);
  tandem::write_safetensors(path("five.safetensors"), state_of(source));
  ResNet target = resnet(2, 1, 2);
  const at::Tensor head = target->fc->weight.clone();
  const at::Tensor conv1 = target->conv1->weight.clone();

  const std::string message = tandem::testing::message_of<UsageError>(
      [&] { tandem::nn::init_from_safetensors(*target, path("five.safetensors")); });
  EXPECT_TRUE(contains(message, path("five.safetensors"))) << message;
  EXPECT_TRUE(contains(message, "fc.weight: [5,512] in file, [2,512] in model")) << message;
  EXPECT_TRUE(contains(message, "fc.bias")) << message;
  EXPECT_TRUE(torch::equal(target->conv1->weight, conv1)) << "nothing is copied when something does not fit";

  InitOptions options;
  options.may_differ = {"fc."};
  const InitReport report = tandem::nn::init_from_safetensors(*target, path("five.safetensors"), options);
  ASSERT_EQ(report.skipped.size(), 2u);
  EXPECT_EQ(report.skipped[0], "fc.weight: shape [5,512] in file, [2,512] in model (kept as initialised)");
  EXPECT_EQ(report.skipped[1], "fc.bias: shape [5] in file, [2] in model (kept as initialised)");
  EXPECT_EQ(report.loaded.size(), 120u);
  EXPECT_TRUE(torch::equal(target->fc->weight, head));
  EXPECT_TRUE(torch::equal(target->conv1->weight, source->conv1->weight));
  const at::Tensor x = torch::randn({2, 1, 16, 16});
  torch::NoGradGuard no_grad;
  EXPECT_TRUE(torch::allclose(target->features(x), source->features(x)));
}

TEST_F(InitFromTest, RgbConvAdaptedToGrayBySumming) {
  ResNet rgb = resnet(1, 3, 2);
  tandem::write_safetensors(path("rgb.safetensors"), state_of(rgb));
  ResNet gray = resnet(2, 1, 2);

  const std::string message = tandem::testing::message_of<UsageError>(
      [&] { tandem::nn::init_from_safetensors(*gray, path("rgb.safetensors")); });
  EXPECT_TRUE(contains(message, "conv1.weight: [64,3,3,3] in file, [64,1,3,3] in model")) << message;

  InitOptions options;
  options.adapt_in_channels = {"conv1.weight"};
  const InitReport report = tandem::nn::init_from_safetensors(*gray, path("rgb.safetensors"), options);
  ASSERT_EQ(report.adapted.size(), 1u);
  EXPECT_EQ(report.adapted[0], "conv1.weight: 3 input channels summed into 1");
  EXPECT_EQ(report.loaded.size(), 121u);
  // A gray image through the adapted model is the original model on that
  // image in all three channels.
  const at::Tensor x = torch::randn({2, 1, 16, 16});
  const at::Tensor expected = logits(rgb, x.repeat({1, 3, 1, 1}));
  EXPECT_TRUE(torch::allclose(logits(gray, x), expected, 1e-4, 1e-4))
      << (logits(gray, x) - expected).abs().max().item<double>();
}

TEST_F(InitFromTest, GrayConvAdaptedToRgbByRepeatingAndScaling) {
  ResNet gray = resnet(1, 1, 2);
  tandem::write_safetensors(path("gray.safetensors"), state_of(gray));
  ResNet rgb = resnet(2, 3, 2);
  InitOptions options;
  options.adapt_in_channels = {"conv1.weight"};
  const InitReport report = tandem::nn::init_from_safetensors(*rgb, path("gray.safetensors"), options);
  ASSERT_EQ(report.adapted.size(), 1u);
  EXPECT_EQ(report.adapted[0], "conv1.weight: 1 input channel repeated into 3, scaled by 1/3");
  EXPECT_TRUE(torch::allclose(rgb->conv1->weight, gray->conv1->weight.repeat({1, 3, 1, 1}) / 3));
  // The gray image in all three channels gives what the gray model gives.
  const at::Tensor x = torch::randn({2, 1, 16, 16});
  EXPECT_TRUE(torch::allclose(logits(rgb, x.repeat({1, 3, 1, 1})), logits(gray, x), 1e-4, 1e-4));
}

TEST_F(InitFromTest, MissingTensorIsNamed) {
  ResNet source = resnet(1, 1, 2);
  tandem::write_safetensors(path("partial.safetensors"), without(state_of(source), "layer3.1.bn2.running_var"));
  ResNet target = resnet(2, 1, 2);
  const std::string message = tandem::testing::message_of<UsageError>(
      [&] { tandem::nn::init_from_safetensors(*target, path("partial.safetensors")); });
  EXPECT_TRUE(contains(message, path("partial.safetensors"))) << message;
  EXPECT_TRUE(contains(message, "1 missing from the file: layer3.1.bn2.running_var")) << message;
}

TEST_F(InitFromTest, HeadlessFileLeavesTheHeadWhenItMayDiffer) {
  ResNet source = resnet(1, 1, 2);
  NamedTensors backbone = without(without(state_of(source), "fc.weight"), "fc.bias");
  tandem::write_safetensors(path("backbone.safetensors"), backbone);
  ResNet target = resnet(2, 1, 2);
  const std::string message = tandem::testing::message_of<UsageError>(
      [&] { tandem::nn::init_from_safetensors(*target, path("backbone.safetensors")); });
  EXPECT_TRUE(contains(message, "2 missing from the file: fc.weight, fc.bias")) << message;

  InitOptions options;
  options.may_differ = {"fc."};
  const InitReport report = tandem::nn::init_from_safetensors(*target, path("backbone.safetensors"), options);
  EXPECT_EQ(report.skipped, (std::vector<std::string>{"fc.weight: not in file (kept as initialised)",
                                                      "fc.bias: not in file (kept as initialised)"}));
  EXPECT_EQ(report.loaded.size(), 120u);
}

TEST_F(InitFromTest, BatchNormCountersMayBeAbsent) {
  ResNet source = resnet(1, 1, 2);
  tandem::write_safetensors(path("nocount.safetensors"), without(state_of(source), "num_batches_tracked"));
  ResNet target = resnet(2, 1, 2);
  const InitReport report = tandem::nn::init_from_safetensors(*target, path("nocount.safetensors"));
  EXPECT_EQ(report.loaded.size(), 102u);
  ASSERT_EQ(report.skipped.size(), 20u);
  EXPECT_EQ(report.skipped[0], "bn1.num_batches_tracked: not in file (kept as initialised)");
  const at::Tensor x = torch::randn({2, 1, 16, 16});
  EXPECT_TRUE(torch::equal(logits(target, x), logits(source, x)));
}

TEST_F(InitFromTest, UnexpectedTensorsAreAnErrorUnlessAllowed) {
  torch::nn::Linear linear(2, 2);
  tandem::write_safetensors(
      path("extra.safetensors"),
      {{"weight", torch::ones({2, 2})}, {"bias", torch::zeros({2})}, {"extra.weight", torch::ones({1})}});
  const std::string message = tandem::testing::message_of<UsageError>(
      [&] { tandem::nn::init_from_safetensors(*linear, path("extra.safetensors")); });
  EXPECT_TRUE(contains(message, "1 in the file only: extra.weight")) << message;

  InitOptions options;
  options.allow_unexpected = true;
  const InitReport report = tandem::nn::init_from_safetensors(*linear, path("extra.safetensors"), options);
  EXPECT_EQ(report.skipped, std::vector<std::string>{"extra.weight: not in model"});
  EXPECT_TRUE(torch::equal(linear->weight, torch::ones({2, 2})));
}

TEST_F(InitFromTest, UnreadableFileIsNamed) {
  torch::nn::Linear linear(2, 2);
  const std::string message = tandem::testing::message_of<UsageError>(
      [&] { tandem::nn::init_from_safetensors(*linear, path("absent.safetensors")); });
  EXPECT_TRUE(contains(message, path("absent.safetensors"))) << message;
}

TEST(InitFromReport, SummaryCountsAndNamesTheFirstFew) {
  InitReport report;
  report.loaded = {"a", "b", "c", "d", "e"};
  report.skipped = {"fc.weight: shape [5,512] in file, [2,512] in model (kept as initialised)"};
  EXPECT_EQ(report.summary(), "5 loaded (a, b, c ... (2 more)), 1 skipped (fc.weight), 0 adapted");
}

}  // namespace
