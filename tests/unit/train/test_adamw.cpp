#include <gtest/gtest.h>
#include <torch/torch.h>

#include <functional>
#include <string>
#include <tuple>
#include <vector>

#include "tandem/error.h"
#include "tandem/io/checkpoint.h"
#include "tandem/train/adamw.h"
#include "tandem/train/blockwise8.h"
#include "../test_support.h"

namespace {

using tandem::AdamW;
using tandem::AdamWOptions;
using tandem::NamedTensors;

// A linear layer's weight and bias and an embedding: the three kinds the
// trainer's decay rule tells apart.
NamedTensors make_params(uint64_t seed) {
  torch::manual_seed(seed);
  return {{"fc.weight", torch::randn({4, 3})}, {"fc.bias", torch::randn({4})}, {"embed.weight", torch::randn({5, 3})}};
}

NamedTensors copy_of(const NamedTensors& params) {
  NamedTensors out;
  for (const auto& [name, tensor] : params) out.emplace_back(name, tensor.detach().clone());
  return out;
}

bool trainer_rule(const std::string& name, const at::Tensor& param) {
  return param.dim() >= 2 && name != "embed.weight";
}

// The same gradients, in fresh tensors, for every copy of the parameters.
std::vector<at::Tensor> grads_for_step(const NamedTensors& params, int step) {
  torch::manual_seed(1000 + step);
  std::vector<at::Tensor> grads;
  for (const auto& [name, tensor] : params) grads.push_back(torch::randn_like(tensor));
  return grads;
}

void set_grads(const NamedTensors& params, const std::vector<at::Tensor>& grads) {
  for (size_t i = 0; i < params.size(); ++i) params[i].second.mutable_grad() = grads[i].clone();
}

void expect_bitwise_equal(const NamedTensors& actual, const NamedTensors& expected) {
  ASSERT_EQ(actual.size(), expected.size());
  for (size_t i = 0; i < actual.size(); ++i) {
    EXPECT_EQ(actual[i].first, expected[i].first);
    EXPECT_TRUE(torch::equal(actual[i].second, expected[i].second)) << actual[i].first;
  }
}

// torch::optim::AdamW with our decay rule expressed as two parameter groups.
// It updates one parameter at a time in eight passes, the fused kernel ours
// runs in one, so the two agree to float rounding, not to the bit: a wrong
// decay group, bias correction or rate would be off by far more.
void check_against_torch(double weight_decay) {
  const NamedTensors ours = make_params(7);
  const NamedTensors theirs = copy_of(ours);
  const NamedTensors start = copy_of(ours);
  const AdamWOptions options{0.9, 0.95, 1e-8, weight_decay};
  AdamW adamw(ours, options, trainer_rule);

  auto group_options = [&](double decay) {
    auto o = std::make_unique<torch::optim::AdamWOptions>(1e-3);
    o->betas({0.9, 0.95}).eps(1e-8).weight_decay(decay);
    return o;
  };
  std::vector<torch::optim::OptimizerParamGroup> groups;
  groups.emplace_back(std::vector<at::Tensor>{theirs[0].second}, group_options(weight_decay));
  groups.emplace_back(std::vector<at::Tensor>{theirs[1].second, theirs[2].second}, group_options(0.0));
  torch::optim::AdamW reference(groups, torch::optim::AdamWOptions(1e-3));

  for (int step = 0; step < 6; ++step) {
    const double lr = 1e-2 / (step + 1);  // a changing rate, as under a schedule
    const auto grads = grads_for_step(ours, step);
    set_grads(ours, grads);
    set_grads(theirs, grads);
    for (auto& group : reference.param_groups()) static_cast<torch::optim::AdamWOptions&>(group.options()).lr(lr);
    adamw.step(lr);
    reference.step();
  }
  ASSERT_EQ(ours.size(), theirs.size());
  for (size_t i = 0; i < ours.size(); ++i) {
    EXPECT_TRUE(torch::allclose(ours[i].second, theirs[i].second, /*rtol=*/1e-6, /*atol=*/1e-7)) << ours[i].first;
    EXPECT_FALSE(torch::equal(ours[i].second, start[i].second)) << ours[i].first << " never moved";
  }
}

TEST(TrainAdamW, MatchesTorchAdamW) { check_against_torch(0.0); }

TEST(TrainAdamW, MatchesTorchAdamWWithDecayOnMatricesOnly) { check_against_torch(0.1); }

// A transposed weight with a contiguous gradient, as a gradient all-reduced
// through a flat bucket arrives: updated as if both shared one layout.
TEST(TrainAdamW, GradientInAnotherLayoutThanItsParameter) {
  torch::manual_seed(11);
  const at::Tensor transposed = torch::randn({4, 3}).t();
  ASSERT_FALSE(transposed.is_contiguous());
  const NamedTensors odd = {{"w", transposed}};
  const NamedTensors plain = {{"w", transposed.contiguous()}};
  AdamW a(odd, AdamWOptions{0.9, 0.95, 1e-8, 0.1}, trainer_rule);
  AdamW b(plain, AdamWOptions{0.9, 0.95, 1e-8, 0.1}, trainer_rule);
  for (int step = 0; step < 3; ++step) {
    const at::Tensor grad = torch::randn({3, 4});
    odd[0].second.mutable_grad() = grad.clone();
    plain[0].second.mutable_grad() = grad.clone();
    a.step(1e-2);
    b.step(1e-2);
  }
  EXPECT_TRUE(torch::equal(odd[0].second, plain[0].second));
}

TEST(TrainAdamW, RefusesAParameterWithGapsInMemory) {
  const at::Tensor every_other = torch::zeros({8}).slice(0, 0, 8, 2);
  const std::string message = tandem::testing::message_of<std::invalid_argument>(
      [&] { AdamW adamw({{"w", every_other}}, AdamWOptions{}, trainer_rule); });
  EXPECT_NE(message.find("'w' is not one dense block"), std::string::npos) << message;
}

TEST(TrainAdamW, DecaysOnlyWhereTheRuleSays) {
  const NamedTensors params = make_params(3);
  const NamedTensors before = copy_of(params);
  AdamW adamw(params, AdamWOptions{0.9, 0.999, 1e-8, 0.5}, trainer_rule);
  EXPECT_TRUE(adamw.decays(0));
  EXPECT_FALSE(adamw.decays(1));
  EXPECT_FALSE(adamw.decays(2));

  // With zero gradients the Adam update is 0 / (0 + eps) = 0: only decay moves.
  for (const auto& [name, tensor] : params) tensor.mutable_grad() = torch::zeros_like(tensor);
  adamw.step(0.1);
  EXPECT_TRUE(torch::allclose(params[0].second, before[0].second * (1 - 0.1 * 0.5)));
  EXPECT_TRUE(torch::equal(params[1].second, before[1].second));
  EXPECT_TRUE(torch::equal(params[2].second, before[2].second));
}

TEST(TrainAdamW, SkipsParametersWithoutGradients) {
  const NamedTensors params = make_params(4);
  const NamedTensors before = copy_of(params);
  AdamW adamw(params, AdamWOptions{}, trainer_rule);
  params[0].second.mutable_grad() = torch::ones_like(params[0].second);
  adamw.step(1e-2);

  EXPECT_FALSE(torch::equal(params[0].second, before[0].second));
  EXPECT_TRUE(torch::equal(params[1].second, before[1].second));
  const NamedTensors state = adamw.state();
  ASSERT_EQ(state.size(), 9u);
  EXPECT_EQ(state[2].first, "fc.weight.step");
  EXPECT_EQ(state[2].second.dim(), 0);
  EXPECT_EQ(state[2].second.scalar_type(), torch::kInt64);
  EXPECT_EQ(state[2].second.item<int64_t>(), 1);
  EXPECT_EQ(state[5].first, "fc.bias.step");
  EXPECT_EQ(state[5].second.item<int64_t>(), 0);
}

// The fused kernel writes the weights without moving their version
// counters; what keeps a copy of a weight until it changes (summarize's
// packed weights for decoding, WeightCopy) and autograd's check of saved
// tensors read those counters, as after torch's unfused in-place update.
TEST(TrainAdamW, AStepMovesTheVersionOfEachParameterItUpdates) {
  const NamedTensors params = make_params(6);
  AdamW adamw(params, AdamWOptions{}, trainer_rule);
  std::vector<int64_t> before;
  for (const auto& [name, tensor] : params) before.push_back(tensor._version());
  params[0].second.mutable_grad() = torch::ones_like(params[0].second);
  adamw.step(1e-2);
  EXPECT_GT(params[0].second._version(), before[0]);
  EXPECT_EQ(params[1].second._version(), before[1]);  // no gradient: not updated
}

TEST(TrainAdamW, ZeroGradLeavesGradientsUndefined) {
  const NamedTensors params = make_params(5);
  AdamW adamw(params, AdamWOptions{}, trainer_rule);
  set_grads(params, grads_for_step(params, 0));
  adamw.zero_grad();
  for (const auto& [name, tensor] : params) EXPECT_FALSE(tensor.grad().defined()) << name;
}

// 3 steps, the state into a fresh optimizer over a copy of the weights
// (nothing converted), 2 more steps of each: weights and state bitwise alike.
void expect_resume_bitwise(const NamedTensors& original, const AdamWOptions& options) {
  AdamW first(original, options, trainer_rule);
  for (int step = 0; step < 3; ++step) {
    set_grads(original, grads_for_step(original, step));
    first.step(1e-2);
  }
  const NamedTensors resumed = copy_of(original);
  AdamW second(resumed, options, trainer_rule);
  EXPECT_EQ(second.load_state(first.state()), 0);
  for (int step = 3; step < 5; ++step) {
    const auto grads = grads_for_step(original, step);
    set_grads(original, grads);
    set_grads(resumed, grads);
    first.step(1e-2);
    second.step(1e-2);
  }
  expect_bitwise_equal(resumed, original);
  expect_bitwise_equal(second.state(), first.state());
}

TEST(TrainAdamW, RestoredStateResumesBitwise) { expect_resume_bitwise(make_params(6), {0.9, 0.95, 1e-8, 0.1}); }

using TrainAdamWFile = tandem::testing::TempDirTest;

// Through a checkpoint file and into a model built afresh, as a resumed run does.
TEST_F(TrainAdamWFile, StateSurvivesACheckpointFile) {
  const AdamWOptions options{0.9, 0.95, 1e-8, 0.1};
  const NamedTensors original = make_params(8);
  AdamW first(original, options, trainer_rule);
  for (int step = 0; step < 3; ++step) {
    set_grads(original, grads_for_step(original, step));
    first.step(1e-2);
  }
  tandem::save_checkpoint(path("ckpt.h5"), {{"model", original}, {"optim", first.state()}}, {});

  const NamedTensors resumed = make_params(99);
  const tandem::Checkpoint checkpoint = tandem::load_checkpoint(path("ckpt.h5"));
  tandem::restore(checkpoint, "model", resumed);
  AdamW second(resumed, options, trainer_rule);
  second.load_state(checkpoint.set("optim"));

  const auto grads = grads_for_step(original, 3);
  set_grads(original, grads);
  set_grads(resumed, grads);
  first.step(1e-2);
  second.step(1e-2);
  expect_bitwise_equal(resumed, original);
}

TEST(TrainAdamW, LoadStateRejectsAMismatchAndChangesNothing) {
  const NamedTensors params = make_params(9);
  AdamW adamw(params, AdamWOptions{}, trainer_rule);
  set_grads(params, grads_for_step(params, 0));
  adamw.step(1e-2);
  const NamedTensors before = copy_of(adamw.state());

  NamedTensors bad = copy_of(before);
  bad.erase(bad.begin() + 1);                                     // fc.weight.exp_avg_sq
  bad[2].second = torch::zeros({3});                              // fc.bias.exp_avg, should be [4]
  bad.emplace_back("head.weight.exp_avg", torch::zeros({2, 2}));  // no such parameter
  bad[1].second = torch::tensor(1.5);                             // fc.weight.step as a float

  const std::string message = tandem::testing::message_of<tandem::UsageError>([&] { adamw.load_state(bad); });
  EXPECT_NE(message.find("1 missing: fc.weight.exp_avg_sq"), std::string::npos) << message;
  EXPECT_NE(message.find("1 unexpected: head.weight.exp_avg"), std::string::npos) << message;
  EXPECT_NE(message.find("fc.bias.exp_avg: expected Float [4], got Float [3]"), std::string::npos) << message;
  EXPECT_NE(message.find("fc.weight.step: expected a 0-d integer"), std::string::npos) << message;
  expect_bitwise_equal(adamw.state(), before);
}

// Under "8bit": a matrix of 5120 elements (two blocks and a short one) and
// a bias that stays fp32.
NamedTensors make_large_params(uint64_t seed) {
  torch::manual_seed(seed);
  return {{"fc.weight", torch::randn({80, 64})}, {"fc.bias", torch::randn({64})}};
}

AdamWOptions eight_bit_options() {
  AdamWOptions options{0.9, 0.95, 1e-8, 0.1};
  options.eight_bit = true;
  return options;
}

tandem::QuantizedMoment quantized_from(const NamedTensors& state, const std::string& key, bool is_signed) {
  for (const auto& [name, t] : state)
    if (name == key + ".codes") {
      for (const auto& [other, absmax] : state)
        if (other == key + ".absmax") return {t, absmax, is_signed};
    }
  ADD_FAILURE() << "no " << key << ".codes and .absmax";
  return {};
}

at::Tensor dequantized(const tandem::QuantizedMoment& q, const at::Tensor& like) {
  at::Tensor out = torch::empty({q.codes.numel()});
  tandem::dequantize_blockwise(q.codes, q.absmax, tandem::dynamic_map(q.is_signed), out);
  return out.view_as(like);
}

// A step from 8-bit moments is fp32 AdamW's step from their dequantised
// values, to the bit, and leaves behind the quantised fp32 results: the
// whole of the difference is the storage. Small tensors stay fp32.
TEST(TrainAdamW8bit, AStepIsFp32AdamWFromTheDequantisedMoments) {
  const NamedTensors params = make_large_params(21);
  AdamW eight(params, eight_bit_options(), trainer_rule);
  for (int step = 0; step < 3; ++step) {
    set_grads(params, grads_for_step(params, step));
    eight.step(1e-2);
  }
  const NamedTensors state = copy_of(eight.state());
  std::vector<std::string> names;
  for (const auto& [name, t] : state) names.push_back(name);
  EXPECT_EQ(names, (std::vector<std::string>{"fc.weight.exp_avg.codes", "fc.weight.exp_avg.absmax",
                                             "fc.weight.exp_avg_sq.codes", "fc.weight.exp_avg_sq.absmax",
                                             "fc.weight.step", "fc.bias.exp_avg", "fc.bias.exp_avg_sq", "fc.bias.step"}));
  EXPECT_EQ(state[0].second.scalar_type(), torch::kUInt8);
  EXPECT_EQ(state[0].second.numel(), 5120);
  EXPECT_EQ(state[1].second.numel(), 3);

  const NamedTensors reference = copy_of(params);
  const auto avg = quantized_from(state, "fc.weight.exp_avg", true);
  const auto avg_sq = quantized_from(state, "fc.weight.exp_avg_sq", false);
  const NamedTensors fp32_state = {{"fc.weight.exp_avg", dequantized(avg, params[0].second)},
                                   {"fc.weight.exp_avg_sq", dequantized(avg_sq, params[0].second)},
                                   {"fc.weight.step", state[4].second},
                                   state[5], state[6], state[7]};
  AdamW fp32(reference, AdamWOptions{0.9, 0.95, 1e-8, 0.1}, trainer_rule);
  EXPECT_EQ(fp32.load_state(fp32_state), 0);

  const auto grads = grads_for_step(params, 3);
  set_grads(params, grads);
  set_grads(reference, grads);
  eight.step(1e-2);
  fp32.step(1e-2);
  expect_bitwise_equal(params, reference);
  // What the 8-bit optimizer keeps is the fp32 one's moments, quantised.
  const NamedTensors after = fp32.state();
  for (const auto& [key, is_signed, index] : {std::tuple{"fc.weight.exp_avg", true, 0}, std::tuple{"fc.weight.exp_avg_sq", false, 1}}) {
    const auto mine = quantized_from(eight.state(), key, is_signed);
    const at::Tensor values = after[index].second.reshape({-1}).contiguous();
    at::Tensor codes = torch::empty({values.numel()}, torch::kUInt8), absmax = torch::empty({3});
    tandem::quantize_blockwise(values, tandem::dynamic_map(is_signed), codes, absmax);
    EXPECT_TRUE(torch::equal(mine.codes, codes)) << key;
    EXPECT_TRUE(torch::equal(mine.absmax, absmax)) << key;
  }
}

TEST(TrainAdamW8bit, RestoredStateResumesBitwise) { expect_resume_bitwise(make_large_params(22), eight_bit_options()); }

// A checkpoint of either form resumes under the other: fp32 moments are
// quantised, 8-bit ones dequantised, and the count of converted parameters
// says so (the small bias is fp32 in both).
TEST(TrainAdamW8bit, ConvertsACheckpointOfTheOtherForm) {
  const NamedTensors params = make_large_params(23);
  AdamW fp32(params, AdamWOptions{0.9, 0.95, 1e-8, 0.1}, trainer_rule);
  set_grads(params, grads_for_step(params, 0));
  fp32.step(1e-2);
  const NamedTensors fp32_state = copy_of(fp32.state());

  AdamW eight(copy_of(params), eight_bit_options(), trainer_rule);
  EXPECT_EQ(eight.load_state(fp32_state), 1);
  const NamedTensors quantized = copy_of(eight.state());
  const auto avg = quantized_from(quantized, "fc.weight.exp_avg", true);
  const at::Tensor back = dequantized(avg, params[0].second);
  const float bound = fp32_state[0].second.abs().max().item<float>() * 0.0071f;
  EXPECT_LE((back - fp32_state[0].second).abs().max().item<float>(), bound);
  EXPECT_TRUE(torch::equal(quantized[4].second, fp32_state[2].second)) << "the step count";

  AdamW again(copy_of(params), AdamWOptions{0.9, 0.95, 1e-8, 0.1}, trainer_rule);
  EXPECT_EQ(again.load_state(quantized), 1);
  EXPECT_TRUE(torch::equal(again.state()[0].second, back)) << "8-bit moments dequantised on load";
}

TEST(TrainAdamW8bit, LoadStateNamesAMisshapenQuantisedEntry) {
  const NamedTensors params = make_large_params(24);
  AdamW eight(params, eight_bit_options(), trainer_rule);
  NamedTensors bad = copy_of(eight.state());
  bad[1].second = torch::zeros({2});  // fc.weight.exp_avg.absmax: 3 blocks
  const std::string message = tandem::testing::message_of<tandem::UsageError>([&] { eight.load_state(bad); });
  EXPECT_NE(message.find("fc.weight.exp_avg.absmax: expected Float [3], got Float [2]"), std::string::npos)
      << message;
}

// Codes stored as another type would be converted value by value, not
// decoded: a code of 300 would wrap to 44. Refused, naming the entry.
TEST(TrainAdamW8bit, LoadStateNamesQuantisedCodesOfAnotherType) {
  const NamedTensors params = make_large_params(25);
  AdamW eight(params, eight_bit_options(), trainer_rule);
  NamedTensors bad = copy_of(eight.state());
  ASSERT_EQ(bad[0].first, "fc.weight.exp_avg.codes");
  bad[0].second = bad[0].second.to(torch::kInt);
  const std::string message = tandem::testing::message_of<tandem::UsageError>([&] { eight.load_state(bad); });
  EXPECT_NE(message.find("fc.weight.exp_avg.codes: expected Byte ["), std::string::npos) << message;
  EXPECT_NE(message.find("got Int ["), std::string::npos) << message;
}

}  // namespace
