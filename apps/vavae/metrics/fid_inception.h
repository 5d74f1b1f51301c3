#pragma once
// The network FID's published figures come from: Inception-v3 as TensorFlow's
// FID code ran it (the 2015-12-05 graph), in pytorch-fid's port
// (pytorch_fid/inception.py, InceptionV3 with use_fid_inception). It is
// torchvision's Inception-v3 up to the last average pool, with the FID
// graph's three differences: the average pools inside Mixed_5b-d, 6b-e and
// 7b leave the zero padding out of their means (count_include_pad=False),
// and Mixed_7c pools its branch by max rather than average. Images are
// resized bilinearly to 299 (align_corners=False, no antialiasing), scaled
// from [0, 1] to [-1, 1], and give the 2048 channels of the final average
// pool ("pool3").
//
// Submodules carry torchvision's names (Conv2d_1a_3x3.conv.weight,
// Mixed_5b.branch1x1.bn.running_mean ...), which are those of pytorch-fid's
// weights file, so the file converted to safetensors loads as it is (its fc.*
// is not used). There are no weights in the repo: the user brings them
// (`eval.inception_weights`, docs/vavae.md).
#include <torch/nn/module.h>
#include <torch/nn/pimpl.h>

#include <memory>
#include <string>
#include <vector>

namespace vavae {

// One Inception "Mixed" block: named convolution branches concatenated.
class InceptionBlock : public torch::nn::Module {
 public:
  virtual at::Tensor forward(const at::Tensor& x) = 0;
};

class FidInceptionImpl : public torch::nn::Module {
 public:
  static constexpr int64_t kFeatures = 2048;
  static constexpr int64_t kInputSize = 299;

  // The layers with LibTorch's default initialisation: values to be loaded.
  FidInceptionImpl();
  // images [N, 3, H, W] in [0, 1], any H and W -> pool3 features [N, 2048].
  at::Tensor forward(const at::Tensor& images);

 private:
  std::vector<std::shared_ptr<torch::nn::Module>> stem_;  // Conv2d_1a_3x3 ... Conv2d_4a_3x3
  std::vector<std::shared_ptr<InceptionBlock>> mixed_;    // Mixed_5b ... Mixed_7c
};
TORCH_MODULE(FidInception);

// The network with the weights of a safetensors file under torchvision's
// names, in evaluation mode. Tensors the network lacks (fc.*,
// num_batches_tracked) are ignored. Throws UsageError naming the file (and
// `key`, the setting that named it) when it cannot be read, or a tensor is
// missing or has another shape.
FidInception load_fid_inception(const std::string& path, const std::string& key);

}  // namespace vavae
