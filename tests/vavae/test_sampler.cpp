#include <gtest/gtest.h>
#include <torch/torch.h>

#include <vector>

#include "flow/sampler.h"
#include "model/dit.h"
#include "tandem/error.h"

namespace {

using vavae::SamplerOptions;

constexpr int64_t kNull = 10;

// A hand-made field that depends on x, t and y.
at::Tensor field(const at::Tensor& x, const at::Tensor& t, const at::Tensor& y) {
  return 2 * x + t.reshape({-1, 1, 1, 1}) + y.to(x.scalar_type()).reshape({-1, 1, 1, 1});
}

// Constant velocities: `cond` for any label, `uncond` for the null class;
// records each call's batch size and labels.
struct TwoFields {
  at::Tensor cond, uncond;
  std::vector<at::Tensor> labels_seen;

  vavae::VelocityFn fn() {
    return [this](const at::Tensor& x, const at::Tensor&, const at::Tensor& y) {
      labels_seen.push_back(y.clone());
      const at::Tensor is_null = (y == kNull).reshape({-1, 1, 1, 1});
      return torch::where(is_null, uncond.expand_as(x), cond.expand_as(x));
    };
  }
};

SamplerOptions options(int64_t steps, double shift, double scale = 1.0) {
  SamplerOptions o;
  o.num_steps = steps;
  o.shift = shift;
  o.guidance_scale = scale;
  o.null_class = kNull;
  return o;
}

TEST(VavaeSampler, ShiftFormula) {
  EXPECT_DOUBLE_EQ(vavae::shift_timestep(0.0, 0.3), 0.0);
  EXPECT_DOUBLE_EQ(vavae::shift_timestep(1.0, 0.3), 1.0);
  EXPECT_NEAR(vavae::shift_timestep(0.5, 0.3), 0.15 / 0.65, 1e-15);
  EXPECT_NEAR(vavae::shift_timestep(0.25, 3.0), 0.75 / 1.5, 1e-15);
  EXPECT_DOUBLE_EQ(vavae::shift_timestep(0.37, 1.0), 0.37);
  const std::vector<double> grid = vavae::timestep_grid(4, 1.0);
  EXPECT_EQ(grid, (std::vector<double>{0.0, 0.25, 0.5, 0.75, 1.0}));
  EXPECT_EQ(vavae::timestep_grid(50, 0.3).size(), 51u);
}

TEST(VavaeSampler, OneStepIsOneEulerStep) {
  const at::Tensor x0 = torch::randn({3, 2, 2, 2});
  const at::Tensor y = torch::tensor({0, 4, 7}, torch::kLong);
  // t = 0 to 1 in one step: x0 + 1 * v(x0, 0, y).
  const at::Tensor expected = x0 + (2 * x0 + y.to(torch::kFloat).reshape({-1, 1, 1, 1}));
  EXPECT_TRUE(torch::allclose(vavae::sample_euler(field, x0, y, options(1, 0.3)), expected, 1e-6, 1e-6));

  // Two steps on the shifted grid 0, t1 = 0.15 / 0.65, 1.
  const double t1 = 0.15 / 0.65;
  const at::Tensor yf = y.to(torch::kFloat).reshape({-1, 1, 1, 1});
  const at::Tensor xa = x0 + t1 * (2 * x0 + yf);
  const at::Tensor xb = xa + (1 - t1) * (2 * xa + t1 + yf);
  EXPECT_TRUE(torch::allclose(vavae::sample_euler(field, x0, y, options(2, 0.3)), xb, 1e-5, 1e-6));
}

TEST(VavaeSampler, ScaleOneIsTheConditionalModel) {
  TwoFields fields{torch::full({1, 3, 1, 1}, 2.0), torch::full({1, 3, 1, 1}, -5.0)};
  const at::Tensor x0 = torch::zeros({2, 3, 1, 1});
  const at::Tensor y = torch::tensor({1, 2}, torch::kLong);
  const at::Tensor out = vavae::sample_euler(fields.fn(), x0, y, options(4, 0.3, 1.0));
  EXPECT_TRUE(torch::allclose(out, torch::full({2, 3, 1, 1}, 2.0)));
  ASSERT_EQ(fields.labels_seen.size(), 4u);
  for (const auto& seen : fields.labels_seen) EXPECT_TRUE(torch::equal(seen, y));  // never the null class
}

TEST(VavaeSampler, GuidanceCombinesOneDoubledCall) {
  TwoFields fields{torch::full({1, 3, 1, 1}, 2.0), torch::full({1, 3, 1, 1}, -1.0)};
  const at::Tensor x0 = torch::zeros({2, 3, 1, 1});
  const at::Tensor y = torch::tensor({1, 2}, torch::kLong);
  SamplerOptions o = options(1, 1.0, 4.0);
  o.cfg_interval_start = 0.0;
  // -1 + 4 * (2 - -1) = 11 over the one step.
  EXPECT_TRUE(torch::allclose(vavae::sample_euler(fields.fn(), x0, y, o), torch::full({2, 3, 1, 1}, 11.0)));
  ASSERT_EQ(fields.labels_seen.size(), 1u);
  EXPECT_TRUE(torch::equal(fields.labels_seen[0], torch::tensor({int64_t{1}, int64_t{2}, kNull, kNull}, torch::kLong)));
}

TEST(VavaeSampler, CfgChannelsGuidesOnlyTheFirstChannels) {
  TwoFields fields{torch::full({1, 5, 1, 1}, 2.0), torch::full({1, 5, 1, 1}, -1.0)};
  SamplerOptions o = options(1, 1.0, 4.0);
  o.cfg_interval_start = 0.0;
  o.cfg_channels = 3;
  const at::Tensor out =
      vavae::sample_euler(fields.fn(), torch::zeros({1, 5, 1, 1}), torch::tensor({0}, torch::kLong), o);
  EXPECT_TRUE(torch::allclose(out.flatten(), torch::tensor({11.0f, 11.0f, 11.0f, 2.0f, 2.0f})));
  o.cfg_channels = 6;
  EXPECT_THROW(vavae::sample_euler(fields.fn(), torch::zeros({1, 5, 1, 1}), torch::tensor({0}, torch::kLong), o),
               tandem::UsageError);
}

TEST(VavaeSampler, NoGuidanceBelowTheIntervalStart) {
  TwoFields fields{torch::full({1, 1, 1, 1}, 2.0), torch::full({1, 1, 1, 1}, -1.0)};
  SamplerOptions o = options(2, 1.0, 4.0);
  o.cfg_interval_start = 0.5;
  // Step at t = 0: conditional alone, 0.5 * 2; step at t = 0.5: guided, 0.5 * 11.
  const at::Tensor out =
      vavae::sample_euler(fields.fn(), torch::zeros({1, 1, 1, 1}), torch::tensor({3}, torch::kLong), o);
  EXPECT_NEAR(out.item<double>(), 0.5 * 2 + 0.5 * 11, 1e-6);
  ASSERT_EQ(fields.labels_seen.size(), 2u);
  EXPECT_EQ(fields.labels_seen[0].size(0), 1);
  EXPECT_EQ(fields.labels_seen[1].size(0), 2);
}

// The exact field towards a point x1, (x1 - x) / (1 - t), and the constant
// x1 - x0: Euler lands on x1 on any grid.
TEST(VavaeSampler, ExactFieldsLandOnTheTarget) {
  const at::Tensor x1 = torch::randn({2, 3, 4, 4});
  const at::Tensor x0 = torch::randn({2, 3, 4, 4});
  const at::Tensor y = torch::zeros({2}, torch::kLong);
  const vavae::VelocityFn towards = [&](const at::Tensor& x, const at::Tensor& t, const at::Tensor&) {
    return (x1 - x) / (1 - t.reshape({-1, 1, 1, 1}));
  };
  const vavae::VelocityFn constant = [&](const at::Tensor&, const at::Tensor&, const at::Tensor&) { return x1 - x0; };
  for (const int64_t steps : {1, 7, 50}) {
    EXPECT_TRUE(torch::allclose(vavae::sample_euler(towards, x0, y, options(steps, 0.3)), x1, 1e-4, 1e-5)) << steps;
    EXPECT_TRUE(torch::allclose(vavae::sample_euler(constant, x0, y, options(steps, 0.3)), x1, 1e-4, 1e-5)) << steps;
  }
}

// A fresh DiT predicts zero velocity: sampling leaves the noise where it is.
TEST(VavaeSampler, RunsAFreshDit) {
  vavae::DitOptions dit_options = vavae::DitOptions::preset("tiny");
  dit_options.input_size = 4;
  dit_options.in_channels = 4;
  dit_options.num_classes = kNull;
  vavae::Dit dit(dit_options);
  dit->eval();
  const vavae::VelocityFn model = [&](const at::Tensor& x, const at::Tensor& t, const at::Tensor& y) {
    return dit(x, t, y);
  };
  const at::Tensor noise = torch::randn({2, 4, 4, 4});
  const at::Tensor out = vavae::sample_euler(model, noise, torch::tensor({1, 9}, torch::kLong), options(3, 0.3, 4.0));
  EXPECT_TRUE(torch::equal(out, noise));
}

TEST(VavaeSampler, GuidanceNeedsTheNullClass) {
  SamplerOptions o;
  o.guidance_scale = 4.0;
  EXPECT_THROW(o.validate(), tandem::UsageError);
  o.null_class = 9;
  EXPECT_NO_THROW(o.validate());
}

}  // namespace
