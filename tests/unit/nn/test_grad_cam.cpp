#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cstdlib>
#include <string>

#include "tandem/io/safetensors.h"
#include "tandem/nn/grad_cam.h"
#include "tandem/nn/init_from.h"
#include "tandem/nn/resnet.h"
#include "tandem/train/autocast_guard.h"
#include "tandem/train/precision.h"

namespace {

using tandem::nn::ResNet;

ResNet small_resnet(int64_t classes) {
  tandem::nn::ResNetOptions o;
  o.in_channels = 3;
  o.num_classes = classes;
  o.stem = "small";
  torch::manual_seed(3);
  ResNet model(o);
  model->eval();
  return model;
}

TEST(GradCam, ScalesEachMapToZeroOneAndLeavesAFlatMapAtZero) {
  const at::Tensor maps = torch::tensor({0.5f, 1.5f, 2.5f, 4.5f, 0.f, 0.f, 0.f, 0.f}).view({2, 2, 2});
  const at::Tensor scaled = tandem::nn::scale_each_map(maps);
  // (x - 0.5) / (4 + 1e-7): 0, 0.25, 0.5, 1 (less a hair); the flat map 0 / 1e-7 = 0.
  EXPECT_TRUE(torch::allclose(scaled[0], torch::tensor({0.f, 0.25f, 0.5f, 1.f}).view({2, 2}), 0, 1e-6));
  EXPECT_TRUE(torch::equal(scaled[1], torch::zeros({2, 2})));
}

// A pooled linear head makes Grad-CAM's channel weights the head's row for
// the class over h x w (CAM): the map by hand from layer4's output.
TEST(GradCam, IsTheClassRowWeighedSumOfTheLastStageUnderAPooledLinearHead) {
  ResNet model = small_resnet(3);
  torch::manual_seed(5);
  const at::Tensor images = torch::randn({2, 3, 16, 16});
  const at::Tensor classes = torch::tensor({2, 0}, torch::kLong);
  const at::Tensor maps = tandem::nn::grad_cam(*model, images, classes);
  ASSERT_EQ(maps.sizes(), (std::vector<int64_t>{2, 16, 16}));
  torch::NoGradGuard no_grad;
  const at::Tensor a = model->feature_map(images);  // [2, 512, 2, 2]: three stride-2 stages
  ASSERT_EQ(a.size(2), 2);
  for (int64_t i = 0; i < 2; ++i) {
    const at::Tensor w = model->fc->weight[classes[i].item<int64_t>()] / 4.0;
    const at::Tensor cam = (w.view({512, 1, 1}) * a[i]).sum(0).clamp_min(0);
    const at::Tensor small = tandem::nn::scale_each_map(cam.unsqueeze(0));
    const at::Tensor up =
        torch::nn::functional::interpolate(small.unsqueeze(1), torch::nn::functional::InterpolateFuncOptions()
                                                                   .size(std::vector<int64_t>{16, 16})
                                                                   .mode(torch::kBilinear)
                                                                   .align_corners(false));
    EXPECT_TRUE(torch::allclose(maps[i], tandem::nn::scale_each_map(up.squeeze(1))[0], 1e-5, 1e-6)) << "image " << i;
    EXPECT_NEAR(maps[i].max().item<float>(), 1.0f, 1e-6);
  }
  // The model's own gradients are neither made nor needed.
  for (const auto& p : model->parameters()) EXPECT_FALSE(p.grad().defined());
}

// Class 1 is an image with one bright 8 x 8 square somewhere on noise,
// class 0 the noise alone. After a short training the map of class 1 on such
// an image is on the square: its mean there is at least twice its mean
// elsewhere, and its peak within 4 pixels (half a cell of layer4's 4 x 4
// map) of the square. BatchNorm's running statistics are then taken afresh
// from the final weights (a cumulative mean over 10 batches): after 12 steps
// the running means still hold the first steps' and evaluation says one class.
TEST(GradCam, IsOnTheSquareThatSetsTheLabel) {
  constexpr int64_t kSize = 32, kSquare = 8;
  ResNet model = small_resnet(2);
  model->train();
  torch::optim::Adam adam(model->parameters(), torch::optim::AdamOptions(1e-3));
  torch::manual_seed(7);
  const auto draw = [](int64_t n, std::vector<std::pair<int64_t, int64_t>>* corners) {
    at::Tensor images = torch::rand({n, 3, kSize, kSize}) * 0.3;
    for (int64_t i = 1; i < n; i += 2) {
      const auto at = torch::randint(0, kSize - kSquare + 1, {2});
      const int64_t y = at[0].item<int64_t>(), x = at[1].item<int64_t>();
      images[i].narrow(1, y, kSquare).narrow(2, x, kSquare).fill_(1.0);
      if (corners) corners->push_back({y, x});
    }
    return images;
  };
  const at::Tensor labels = torch::arange(16) % 2;
  for (int step = 0; step < 12; ++step) {
    adam.zero_grad();
    torch::nn::functional::cross_entropy(model->forward(draw(16, nullptr)), labels).backward();
    adam.step();
  }
  {
    torch::NoGradGuard no_grad;
    for (auto& module : model->modules())
      if (auto* bn = module->as<torch::nn::BatchNorm2d>()) {
        bn->reset_running_stats();
        bn->options.momentum(std::nullopt);
      }
    for (int pass = 0; pass < 10; ++pass) model->forward(draw(16, nullptr));
  }
  model->eval();
  std::vector<std::pair<int64_t, int64_t>> corners;
  const at::Tensor images = draw(8, &corners);
  const at::Tensor maps = tandem::nn::grad_cam(*model, images, torch::ones({8}, torch::kLong));
  for (int64_t k = 0; k < 4; ++k) {
    const at::Tensor map = maps[2 * k + 1];
    const auto [top, left] = corners[k];
    const double on = map.narrow(0, top, kSquare).narrow(1, left, kSquare).sum().item<double>();
    const double mean_on = on / (kSquare * kSquare);
    const double mean_off = (map.sum().item<double>() - on) / (kSize * kSize - kSquare * kSquare);
    const int64_t peak = map.argmax().item<int64_t>(), y = peak / kSize, x = peak % kSize;
    EXPECT_GE(mean_on, 2 * mean_off) << "image " << k << ": the map's mean on the square " << mean_on << ", off it "
                                     << mean_off;
    EXPECT_TRUE(y >= top - 4 && y < top + kSquare + 4 && x >= left - 4 && x < left + kSquare + 4)
        << "image " << k << ": peak at (" << y << ", " << x << "), the square at (" << top << ", " << left << ")";
  }
}

// On a GPU under fp16 autocast (carotid's inference precision there): the
// maps of the CPU's fp32 run, within fp16's rounding.
TEST(GradCam, OnAGpuInHalfPrecisionMapsWhatTheCpuMaps) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device";
  ResNet model = small_resnet(3);
  torch::manual_seed(9);
  const at::Tensor images = torch::randn({4, 3, 32, 32});
  const at::Tensor classes = torch::tensor({0, 1, 2, 1}, torch::kLong);
  const at::Tensor cpu = tandem::nn::grad_cam(*model, images, classes);
  model->to(torch::kCUDA);
  at::Tensor gpu;
  {
    tandem::AutocastGuard autocast(tandem::Precision::FP16, /*cuda=*/true);
    gpu = tandem::nn::grad_cam(*model, images.cuda(), classes.cuda());
  }
  ASSERT_EQ(gpu.scalar_type(), torch::kFloat);
  EXPECT_LT((gpu.cpu() - cpu).abs().max().item<float>(), 2e-2);
}

// tests/peers/grad_cam_vs_pytorch_grad_cam.py: torchvision-layout weights and
// images from TANDEM_PEER_GRAD_CAM_DIR, maps written back for the package's.
TEST(GradCamPeer, MapsOfTheFilesGiven) {
  const char* dir = std::getenv("TANDEM_PEER_GRAD_CAM_DIR");
  if (!dir) GTEST_SKIP() << "run by tests/peers/grad_cam_vs_pytorch_grad_cam.py";
  for (const std::string stem : {"small", "imagenet"}) {
    const std::string base = std::string(dir) + "/" + stem;
    at::Tensor images, classes;
    for (const auto& [name, t] : tandem::read_safetensors(base + "_inputs.safetensors"))
      (name == "images" ? images : classes) = t;
    tandem::nn::ResNetOptions o;
    o.num_classes = 2;
    o.stem = stem;
    ResNet model(o);
    tandem::nn::init_from_safetensors(*model, base + "_weights.safetensors");
    model->eval();
    const at::Tensor maps = tandem::nn::grad_cam(*model, images, classes);
    tandem::write_safetensors(base + "_tandem.safetensors", {{"maps", maps.contiguous()}});
  }
}

}  // namespace
