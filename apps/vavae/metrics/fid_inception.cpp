#include "metrics/fid_inception.h"

#include <torch/torch.h>

#include <array>
#include <filesystem>
#include <map>

#include "tandem/error.h"
#include "tandem/nn/init_from.h"

namespace vavae {

namespace {

using Pair = std::array<int64_t, 2>;

// torchvision's BasicConv2d: convolution without bias, BatchNorm (eps 1e-3), ReLU.
class BasicConvImpl : public torch::nn::Module {
 public:
  BasicConvImpl(int64_t in, int64_t out, Pair kernel, Pair stride, Pair padding)
      : conv(register_module(
            "conv",
            torch::nn::Conv2d(torch::nn::Conv2dOptions(in, out, kernel).stride(stride).padding(padding).bias(false)))),
        bn(register_module("bn", torch::nn::BatchNorm2d(torch::nn::BatchNorm2dOptions(out).eps(1e-3)))) {}
  at::Tensor forward(const at::Tensor& x) { return torch::relu(bn(conv(x))); }

 private:
  torch::nn::Conv2d conv;
  torch::nn::BatchNorm2d bn;
};
TORCH_MODULE(BasicConv);

// A block's convolutions by their torchvision names.
class Branches : public InceptionBlock {
 protected:
  void conv(const std::string& name, int64_t in, int64_t out, Pair kernel, Pair stride = {1, 1},
            Pair padding = {0, 0}) {
    convs_.emplace(name, register_module(name, BasicConv(in, out, kernel, stride, padding)));
  }
  // The named convolutions applied in turn.
  at::Tensor chain(at::Tensor x, std::initializer_list<const char*> names) {
    for (const char* name : names) x = convs_.at(name)(x);
    return x;
  }
  // The FID graph's average pool: the padding is not counted in the mean.
  static at::Tensor avg_pool(const at::Tensor& x) {
    return torch::avg_pool2d(x, 3, 1, 1, /*ceil_mode=*/false, /*count_include_pad=*/false);
  }

 private:
  std::map<std::string, BasicConv> convs_;
};

class InceptionA : public Branches {
 public:
  InceptionA(int64_t in, int64_t pool_features) {
    conv("branch1x1", in, 64, {1, 1});
    conv("branch5x5_1", in, 48, {1, 1});
    conv("branch5x5_2", 48, 64, {5, 5}, {1, 1}, {2, 2});
    conv("branch3x3dbl_1", in, 64, {1, 1});
    conv("branch3x3dbl_2", 64, 96, {3, 3}, {1, 1}, {1, 1});
    conv("branch3x3dbl_3", 96, 96, {3, 3}, {1, 1}, {1, 1});
    conv("branch_pool", in, pool_features, {1, 1});
  }
  at::Tensor forward(const at::Tensor& x) override {
    return torch::cat(
        {chain(x, {"branch1x1"}), chain(x, {"branch5x5_1", "branch5x5_2"}),
         chain(x, {"branch3x3dbl_1", "branch3x3dbl_2", "branch3x3dbl_3"}), chain(avg_pool(x), {"branch_pool"})},
        1);
  }
};

// Halves the grid (Mixed_6a).
class InceptionB : public Branches {
 public:
  explicit InceptionB(int64_t in) {
    conv("branch3x3", in, 384, {3, 3}, {2, 2});
    conv("branch3x3dbl_1", in, 64, {1, 1});
    conv("branch3x3dbl_2", 64, 96, {3, 3}, {1, 1}, {1, 1});
    conv("branch3x3dbl_3", 96, 96, {3, 3}, {2, 2});
  }
  at::Tensor forward(const at::Tensor& x) override {
    return torch::cat({chain(x, {"branch3x3"}), chain(x, {"branch3x3dbl_1", "branch3x3dbl_2", "branch3x3dbl_3"}),
                       torch::max_pool2d(x, 3, 2)},
                      1);
  }
};

class InceptionC : public Branches {
 public:
  InceptionC(int64_t in, int64_t c7) {
    conv("branch1x1", in, 192, {1, 1});
    conv("branch7x7_1", in, c7, {1, 1});
    conv("branch7x7_2", c7, c7, {1, 7}, {1, 1}, {0, 3});
    conv("branch7x7_3", c7, 192, {7, 1}, {1, 1}, {3, 0});
    conv("branch7x7dbl_1", in, c7, {1, 1});
    conv("branch7x7dbl_2", c7, c7, {7, 1}, {1, 1}, {3, 0});
    conv("branch7x7dbl_3", c7, c7, {1, 7}, {1, 1}, {0, 3});
    conv("branch7x7dbl_4", c7, c7, {7, 1}, {1, 1}, {3, 0});
    conv("branch7x7dbl_5", c7, 192, {1, 7}, {1, 1}, {0, 3});
    conv("branch_pool", in, 192, {1, 1});
  }
  at::Tensor forward(const at::Tensor& x) override {
    return torch::cat(
        {chain(x, {"branch1x1"}), chain(x, {"branch7x7_1", "branch7x7_2", "branch7x7_3"}),
         chain(x, {"branch7x7dbl_1", "branch7x7dbl_2", "branch7x7dbl_3", "branch7x7dbl_4", "branch7x7dbl_5"}),
         chain(avg_pool(x), {"branch_pool"})},
        1);
  }
};

// Halves the grid (Mixed_7a).
class InceptionD : public Branches {
 public:
  explicit InceptionD(int64_t in) {
    conv("branch3x3_1", in, 192, {1, 1});
    conv("branch3x3_2", 192, 320, {3, 3}, {2, 2});
    conv("branch7x7x3_1", in, 192, {1, 1});
    conv("branch7x7x3_2", 192, 192, {1, 7}, {1, 1}, {0, 3});
    conv("branch7x7x3_3", 192, 192, {7, 1}, {1, 1}, {3, 0});
    conv("branch7x7x3_4", 192, 192, {3, 3}, {2, 2});
  }
  at::Tensor forward(const at::Tensor& x) override {
    return torch::cat(
        {chain(x, {"branch3x3_1", "branch3x3_2"}),
         chain(x, {"branch7x7x3_1", "branch7x7x3_2", "branch7x7x3_3", "branch7x7x3_4"}), torch::max_pool2d(x, 3, 2)},
        1);
  }
};

// Mixed_7b pools its last branch by average, Mixed_7c by max (the FID graph's quirk).
class InceptionE : public Branches {
 public:
  InceptionE(int64_t in, bool max_pool) : max_pool_(max_pool) {
    conv("branch1x1", in, 320, {1, 1});
    conv("branch3x3_1", in, 384, {1, 1});
    conv("branch3x3_2a", 384, 384, {1, 3}, {1, 1}, {0, 1});
    conv("branch3x3_2b", 384, 384, {3, 1}, {1, 1}, {1, 0});
    conv("branch3x3dbl_1", in, 448, {1, 1});
    conv("branch3x3dbl_2", 448, 384, {3, 3}, {1, 1}, {1, 1});
    conv("branch3x3dbl_3a", 384, 384, {1, 3}, {1, 1}, {0, 1});
    conv("branch3x3dbl_3b", 384, 384, {3, 1}, {1, 1}, {1, 0});
    conv("branch_pool", in, 192, {1, 1});
  }
  at::Tensor forward(const at::Tensor& x) override {
    const at::Tensor b3 = chain(x, {"branch3x3_1"});
    const at::Tensor b3dbl = chain(x, {"branch3x3dbl_1", "branch3x3dbl_2"});
    const at::Tensor pooled = max_pool_ ? torch::max_pool2d(x, 3, 1, 1) : avg_pool(x);
    return torch::cat(
        {chain(x, {"branch1x1"}), chain(b3, {"branch3x3_2a"}), chain(b3, {"branch3x3_2b"}),
         chain(b3dbl, {"branch3x3dbl_3a"}), chain(b3dbl, {"branch3x3dbl_3b"}), chain(pooled, {"branch_pool"})},
        1);
  }

 private:
  bool max_pool_;
};

}  // namespace

FidInceptionImpl::FidInceptionImpl() {
  const auto stem = [this](const std::string& name, int64_t in, int64_t out, Pair kernel, Pair stride, Pair padding) {
    stem_.push_back(register_module(name, BasicConv(in, out, kernel, stride, padding)));
  };
  stem("Conv2d_1a_3x3", 3, 32, {3, 3}, {2, 2}, {0, 0});
  stem("Conv2d_2a_3x3", 32, 32, {3, 3}, {1, 1}, {0, 0});
  stem("Conv2d_2b_3x3", 32, 64, {3, 3}, {1, 1}, {1, 1});
  stem("Conv2d_3b_1x1", 64, 80, {1, 1}, {1, 1}, {0, 0});
  stem("Conv2d_4a_3x3", 80, 192, {3, 3}, {1, 1}, {0, 0});
  const auto mixed = [this](const std::string& name, std::shared_ptr<InceptionBlock> block) {
    mixed_.push_back(register_module(name, std::move(block)));
  };
  mixed("Mixed_5b", std::make_shared<InceptionA>(192, 32));
  mixed("Mixed_5c", std::make_shared<InceptionA>(256, 64));
  mixed("Mixed_5d", std::make_shared<InceptionA>(288, 64));
  mixed("Mixed_6a", std::make_shared<InceptionB>(288));
  mixed("Mixed_6b", std::make_shared<InceptionC>(768, 128));
  mixed("Mixed_6c", std::make_shared<InceptionC>(768, 160));
  mixed("Mixed_6d", std::make_shared<InceptionC>(768, 160));
  mixed("Mixed_6e", std::make_shared<InceptionC>(768, 192));
  mixed("Mixed_7a", std::make_shared<InceptionD>(768));
  mixed("Mixed_7b", std::make_shared<InceptionE>(1280, /*max_pool=*/false));
  mixed("Mixed_7c", std::make_shared<InceptionE>(2048, /*max_pool=*/true));
}

at::Tensor FidInceptionImpl::forward(const at::Tensor& images) {
  TORCH_CHECK(images.dim() == 4 && images.size(1) == 3, "FidInception: expected images [N, 3, H, W], got ",
              images.sizes());
  namespace F = torch::nn::functional;
  at::Tensor x = F::interpolate(images, F::InterpolateFuncOptions()
                                            .size(std::vector<int64_t>{kInputSize, kInputSize})
                                            .mode(torch::kBilinear)
                                            .align_corners(false));
  x = 2 * x - 1;
  // pytorch-fid's blocks 0 and 1: max pools after the third and fifth convolutions.
  for (size_t i = 0; i < stem_.size(); ++i) {
    x = stem_[i]->as<BasicConvImpl>()->forward(x);
    if (i == 2 || i == 4) x = torch::max_pool2d(x, 3, 2);
  }
  for (const auto& block : mixed_) x = block->forward(x);
  return torch::adaptive_avg_pool2d(x, {1, 1}).flatten(1);
}

FidInception load_fid_inception(const std::string& path, const std::string& key) {
  if (!std::filesystem::is_regular_file(path)) throw tandem::UsageError(key + ": " + path + ": no such file");
  FidInception net;
  tandem::nn::InitOptions options;
  options.allow_unexpected = true;
  try {
    tandem::nn::init_from_safetensors(*net, path, options);
  } catch (const tandem::UsageError& e) {
    throw tandem::UsageError(key + ": " + e.what() +
                             " (expected pytorch-fid's FID Inception-v3 weights under torchvision's names)");
  }
  net->eval();
  return net;
}

}  // namespace vavae
