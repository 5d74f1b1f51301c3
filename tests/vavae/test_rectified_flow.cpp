#include <gtest/gtest.h>
#include <ATen/CPUGeneratorImpl.h>
#include <torch/torch.h>

#include "flow/rectified_flow.h"
#include "tandem/error.h"

namespace {

using vavae::TimestepSampling;

TEST(VavaeRectifiedFlow, PairByHand) {
  const at::Tensor x1 = torch::tensor({2.0f, 4.0f}).reshape({2, 1, 1, 1});
  const at::Tensor x0 = torch::tensor({1.0f, -4.0f}).reshape({2, 1, 1, 1});
  const auto pair = vavae::make_flow_pair(x1, x0, torch::tensor({0.25f, 1.0f}));
  // 0.25 * 2 + 0.75 * 1; 1 * 4 + 0 * -4
  EXPECT_TRUE(torch::allclose(pair.x_t.flatten(), torch::tensor({1.25f, 4.0f})));
  EXPECT_TRUE(torch::allclose(pair.velocity.flatten(), torch::tensor({1.0f, 8.0f})));
}

TEST(VavaeRectifiedFlow, TimestepsAreReproducibleFromASeed) {
  for (const auto sampling : {TimestepSampling::kUniform, TimestepSampling::kLogNormal}) {
    at::Generator a = at::detail::createCPUGenerator(11), b = at::detail::createCPUGenerator(11);
    at::Generator c = at::detail::createCPUGenerator(12);
    const at::Tensor t = vavae::sample_timesteps(1000, sampling, a, torch::kCPU);
    EXPECT_TRUE(torch::equal(t, vavae::sample_timesteps(1000, sampling, b, torch::kCPU)));
    EXPECT_FALSE(torch::equal(t, vavae::sample_timesteps(1000, sampling, c, torch::kCPU)));
    EXPECT_GT(t.min().item<double>(), 0.0);
    EXPECT_LT(t.max().item<double>(), 1.0);
    EXPECT_NEAR(t.mean().item<double>(), 0.5, 0.03);  // both are symmetric about 1/2
  }
  // Logit-normal: logit(t) is standard normal.
  at::Generator g = at::detail::createCPUGenerator(3);
  const at::Tensor t = vavae::sample_timesteps(20000, TimestepSampling::kLogNormal, g, torch::kCPU);
  const at::Tensor logits = torch::log(t / (1 - t));
  EXPECT_NEAR(logits.mean().item<double>(), 0.0, 0.03);
  EXPECT_NEAR(logits.std().item<double>(), 1.0, 0.03);
}

TEST(VavaeRectifiedFlow, SampledPairIsOnTheLine) {
  const at::Tensor x1 = torch::randn({4, 2, 3, 3});
  at::Generator a = at::detail::createCPUGenerator(1), b = at::detail::createCPUGenerator(1);
  const auto pair = vavae::sample_flow_pair(x1, TimestepSampling::kUniform, a);
  EXPECT_TRUE(torch::equal(pair.x_t, vavae::sample_flow_pair(x1, TimestepSampling::kUniform, b).x_t));
  const at::Tensor x0 = x1 - pair.velocity;
  const at::Tensor t = pair.t.reshape({4, 1, 1, 1});
  EXPECT_TRUE(torch::allclose(pair.x_t, t * x1 + (1 - t) * x0, 1e-5, 1e-6));
}

TEST(VavaeRectifiedFlow, LossByHand) {
  const at::Tensor predicted = torch::tensor({1.0f, 0.0f, 2.0f, 0.0f}).reshape({2, 2});
  const at::Tensor target = torch::tensor({0.0f, 1.0f, 1.0f, 0.0f}).reshape({2, 2});
  const auto loss = vavae::flow_loss(predicted, target, 0.5);
  EXPECT_NEAR(loss.mse.item<double>(), (1 + 1 + 1 + 0) / 4.0, 1e-6);
  EXPECT_NEAR(loss.cosine.item<double>(), ((1 - 0) + (1 - 1)) / 2.0, 1e-6);  // orthogonal, then parallel
  EXPECT_NEAR(loss.total.item<double>(), 0.75 + 0.5 * 0.5, 1e-6);
  EXPECT_NEAR(vavae::flow_loss(predicted, target).total.item<double>(), 0.75, 1e-6);
}

TEST(VavaeRectifiedFlow, ParsesSamplingNames) {
  EXPECT_EQ(vavae::parse_timestep_sampling("lognormal", "dit.timesteps"), TimestepSampling::kLogNormal);
  EXPECT_EQ(vavae::parse_timestep_sampling("uniform", "dit.timesteps"), TimestepSampling::kUniform);
  EXPECT_THROW(vavae::parse_timestep_sampling("beta", "dit.timesteps"), tandem::UsageError);
}

}  // namespace
