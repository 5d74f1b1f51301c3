// FID's Inception-v3 (apps/vavae/metrics/fid_inception.h): the weights file
// checked at the door, and the peer case tests/peers/fid_inception_vs_pytorch_fid.py
// runs against pytorch-fid's network.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <chrono>
#include <cstdlib>
#include <string>

#include "metrics/fid_inception.h"
#include "tandem/error.h"
#include "tandem/io/safetensors.h"
#include "../unit/test_support.h"

namespace {

tandem::NamedTensors own_weights() {
  vavae::FidInception net;
  tandem::NamedTensors out;
  for (const auto& p : net->named_parameters()) out.emplace_back(p.key(), p.value().detach());
  for (const auto& b : net->named_buffers())
    if (b.key().find("num_batches_tracked") == std::string::npos) out.emplace_back(b.key(), b.value());
  return out;
}

std::string load_error(const std::string& path) {
  return tandem::testing::usage_error_of([&] { vavae::load_fid_inception(path, "eval.inception_weights"); });
}

class FidInception : public tandem::testing::TempDirTest {};

// pytorch-fid's file holds torchvision's names, with fc.* besides; it loads.
TEST_F(FidInception, LoadsTorchvisionNamesAndIgnoresTheClassifier) {
  tandem::NamedTensors weights = own_weights();
  EXPECT_EQ(weights.size(), 94u * 5u) << "94 BasicConv2d blocks: a convolution and four BatchNorm tensors each";
  weights.emplace_back("fc.weight", torch::zeros({1008, 2048}));
  const std::string path = this->path("inception.safetensors");
  tandem::write_safetensors(path, weights);
  EXPECT_NO_THROW(vavae::load_fid_inception(path, "eval.inception_weights"));
}

TEST_F(FidInception, RefusesAFileWithAMissingOrMisshapedTensor) {
  tandem::NamedTensors missing = own_weights();
  missing.erase(missing.begin() + 3);
  const std::string missing_name = own_weights()[3].first;
  tandem::write_safetensors(path("missing.safetensors"), missing);
  const std::string error = load_error(path("missing.safetensors"));
  EXPECT_NE(error.find("eval.inception_weights"), std::string::npos) << error;
  EXPECT_NE(error.find(missing_name), std::string::npos) << error;

  tandem::NamedTensors misshaped = own_weights();
  misshaped[0].second = torch::zeros({32, 1, 3, 3});
  tandem::write_safetensors(path("misshaped.safetensors"), misshaped);
  const std::string shape_error = load_error(path("misshaped.safetensors"));
  EXPECT_NE(shape_error.find(misshaped[0].first), std::string::npos) << shape_error;

  EXPECT_NE(load_error(path("absent.safetensors")).find("no such file"), std::string::npos);
}

// Any image size gives 2048 features per image, each image's alone: the
// batch does not mix (evaluation mode, running statistics).
TEST(FidInceptionNet, GivesPool3FeaturesPerImage) {
  torch::manual_seed(0);
  vavae::FidInception net;
  net->eval();
  torch::NoGradGuard no_grad;
  const at::Tensor images = torch::rand({2, 3, 32, 32});
  const at::Tensor both = net->forward(images);
  ASSERT_EQ(both.sizes(), (std::vector<int64_t>{2, 2048}));
  EXPECT_TRUE(torch::allclose(both[1], net->forward(images.narrow(0, 1, 1))[0], 1e-5, 1e-6));
  EXPECT_GE(both.min().item<float>(), 0.0f) << "an average of ReLU outputs";
}

// Run by tests/peers/fid_inception_vs_pytorch_fid.py and
// tests/bench/bench_fid_features.py: DIR/weights.safetensors
// and DIR/images.safetensors ("images": [N, 3, H, W] in [0, 1]) in,
// DIR/features.safetensors ("features": [N, 2048]) out.
TEST(FidInceptionPeer, WritesItsFeatures) {
  const char* env = std::getenv("TANDEM_PEER_INCEPTION_DIR");
  if (!env) GTEST_SKIP() << "run by tests/peers/fid_inception_vs_pytorch_fid.py";
  const std::string dir = env;
  vavae::FidInception net = vavae::load_fid_inception(dir + "/weights.safetensors", "weights");
  torch::NoGradGuard no_grad;
  const at::Tensor images = tandem::read_safetensors(dir + "/images.safetensors").at(0).second;
  std::vector<at::Tensor> features;  // 32 at a time, as evaluate's micro-batches
  const auto start = std::chrono::steady_clock::now();
  for (const at::Tensor& chunk : images.split(32)) features.push_back(net->forward(chunk));
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  tandem::write_safetensors(dir + "/features.safetensors", {{"features", torch::cat(features)}},
                            {{"seconds", std::to_string(seconds)}});
}

// Run by tests/vavae/e2e/distances.sh: LibTorch's initialisation, seeded, as
// a weights file under torchvision's names (TANDEM_RANDOM_INCEPTION_OUT).
TEST(FidInceptionFixture, WritesRandomWeights) {
  const char* out = std::getenv("TANDEM_RANDOM_INCEPTION_OUT");
  if (!out) GTEST_SKIP() << "run by tests/vavae/e2e/distances.sh";
  torch::manual_seed(7);
  tandem::write_safetensors(out, own_weights());
}

}  // namespace
