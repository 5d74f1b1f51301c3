// VA-VAE's VF alignment as train-vae uses it: the term enters the loss with
// its weight and sends gradient to the encoder and the projection but not to
// the decoder; the features file is checked at the door; a trained model's
// projection does not reach the VAE that extract and sample load.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>
#include <string>
#include <vector>

#include "app/vae_source.h"
#include "app/vae_task.h"
#include "data/vf_features.h"
#include "model/vae_loss.h"
#include "model/vae.h"
#include "tandem/error.h"
#include "tandem/io/checkpoint.h"
#include "tandem/io/h5file.h"
#include "../unit/test_support.h"

namespace {

using tandem::testing::message_of;

struct Inputs {
  at::Tensor images, noise, features;
};

Inputs tiny_inputs() {
  torch::manual_seed(1);
  return {torch::rand({2, 3, 32, 32}) * 2 - 1, torch::randn({2, 4, 8, 8}), torch::randn({2, 6, 8, 8})};
}

vavae::VfVae tiny_vf_vae() {
  torch::manual_seed(0);
  return vavae::VfVae(vavae::VaeOptions::preset("tiny"), 6);
}

std::vector<at::Tensor> grads_after(const at::Tensor& loss, vavae::VfVae& vae) {
  vae->zero_grad();
  loss.backward();
  std::vector<at::Tensor> out;
  for (const auto& p : vae->parameters()) out.push_back(p.grad().defined() ? p.grad().clone() : at::Tensor());
  return out;
}

TEST(VavaeVfTraining, TheTermEntersTheLossWithItsWeights) {
  const Inputs in = tiny_inputs();
  auto vae = tiny_vf_vae();
  vavae::VaeTaskOptions options;
  options.vf_weight = 0.3;
  const at::Tensor plain = vavae::vae_training_loss(*vae, in.images, in.noise, at::Tensor(), options);
  const at::Tensor with = vavae::vae_training_loss(*vae, in.images, in.noise, in.features, options);

  // The same pieces by hand: the projected latents against the features.
  const vavae::VaeOutput out = vae->forward(in.images, in.noise);
  const vavae::VaeLossTerms terms = vavae::vae_loss(in.images, out.reconstruction, out.posterior, options.kl_weight);
  const at::Tensor z = vae->linear_proj(out.latents);
  const at::Tensor vf =
      vavae::vf_cosine_margin_loss(z, in.features) + vavae::vf_distance_matrix_loss(z, in.features);
  const at::Tensor weight = vavae::adaptive_weight(terms.reconstruction, vf, vae->encoder_last_layer(), 1e8);
  ASSERT_GT(vf.item<double>(), 0.0);
  ASSERT_GT(weight.item<double>(), 0.0);
  EXPECT_NEAR(plain.item<double>(), terms.total.item<double>(), 1e-6 * std::abs(terms.total.item<double>()));
  EXPECT_NEAR((with - plain).item<double>(), (0.3 * weight * vf).item<double>(), 1e-4);

  options.vf_weight = 0;
  EXPECT_NEAR(vavae::vae_training_loss(*vae, in.images, in.noise, in.features, options).item<double>(),
              plain.item<double>(), 1e-6 * std::abs(plain.item<double>()));
}

TEST(VavaeVfTraining, ItsGradientReachesTheEncoderAndProjectionNotTheDecoder) {
  const Inputs in = tiny_inputs();
  auto vae = tiny_vf_vae();
  const vavae::VaeTaskOptions options;
  const auto plain = grads_after(vavae::vae_training_loss(*vae, in.images, in.noise, at::Tensor(), options), vae);
  const auto with = grads_after(vavae::vae_training_loss(*vae, in.images, in.noise, in.features, options), vae);
  size_t k = 0;
  for (const auto& named : vae->named_parameters()) {
    const std::string& name = named.key();
    const at::Tensor& a = plain[k];
    const at::Tensor& b = with[k++];
    if (name.rfind("linear_proj.", 0) == 0) {
      EXPECT_FALSE(a.defined()) << name;
      ASSERT_TRUE(b.defined()) << name;
      EXPECT_GT(b.abs().max().item<double>(), 0.0) << name;
    } else if (name.rfind("decoder.", 0) == 0 || name.rfind("post_quant_conv.", 0) == 0) {
      EXPECT_TRUE(torch::allclose(a, b, 1e-5, 1e-7)) << name << ": the VF term reached the decoder";
    } else if (name == "encoder.conv_out.weight") {
      EXPECT_FALSE(torch::allclose(a, b, 1e-5, 1e-7)) << name << ": the VF term did not reach the encoder";
    }
  }
}

class VavaeVfFeatures : public tandem::testing::TempDirTest {
 protected:
  std::vector<vavae::ImageItem> items() const {
    return {{path("data/train/user1/a.png"), 1}, {path("data/train/user2/b.png"), 2}};
  }
};

TEST_F(VavaeVfFeatures, ReadInTheOrderOfTheImagesAndCheckedAtTheDoor) {
  {
    tandem::H5File file(path("vf.h5"), tandem::H5File::Mode::kCreate);
    file.write("train/user2/b.png", torch::full({6, 8, 8}, 2.0f).to(torch::kHalf));
    file.write("train/user1/a.png", torch::full({6, 8, 8}, 1.0f).to(torch::kHalf));
    file.write("train/user1/wrong.png", torch::zeros({6, 4, 4}));
  }
  const at::Tensor f = vavae::read_vf_features(path("vf.h5"), "vae.vf_features", items(), path("data"), 8);
  ASSERT_EQ(f.sizes(), (std::vector<int64_t>{2, 6, 8, 8}));
  EXPECT_EQ(f.scalar_type(), torch::kHalf);  // kept as stored: half the memory
  EXPECT_EQ(f[0][0][0][0].item<float>(), 1.0f);
  EXPECT_EQ(f[1][0][0][0].item<float>(), 2.0f);

  const std::string grid = message_of<tandem::UsageError>(
      [&] { vavae::read_vf_features(path("vf.h5"), "vae.vf_features", items(), path("data"), 4); });
  EXPECT_NE(grid.find("train/user1/a.png is [6,8,8], expected [C,4,4]"), std::string::npos) << grid;
  auto more = items();
  more.push_back({path("data/train/user3/c.png"), 3});
  const std::string missing = message_of<tandem::UsageError>(
      [&] { vavae::read_vf_features(path("vf.h5"), "vae.vf_features", more, path("data"), 8); });
  EXPECT_NE(missing.find("vae.vf_features: " + path("vf.h5") + " has no features for train/user3/c.png"),
            std::string::npos)
      << missing;
  const std::string absent = message_of<tandem::UsageError>(
      [&] { vavae::read_vf_features(path("none.h5"), "vae.vf_features", items(), path("data"), 8); });
  EXPECT_NE(absent.find("none.h5 not found"), std::string::npos) << absent;
}

TEST_F(VavaeVfFeatures, ATrainedModelLoadsAsThePlainVae) {
  auto trained = tiny_vf_vae();
  tandem::save_checkpoint(path("model.h5"), {{"model", tandem::named_tensors(trained->named_parameters())}}, {});
  const vavae::LoadedVae loaded = vavae::load_vae(path("model.h5"), "tiny");
  torch::manual_seed(0);
  vavae::Vae same(vavae::VaeOptions::preset("tiny"));  // the VfVae's VAE weights, drawn first
  EXPECT_EQ(loaded.hash, vavae::weights_hash(*same));
}

}  // namespace
