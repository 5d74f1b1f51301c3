#include <gtest/gtest.h>
#include <torch/torch.h>

#include <string>

#include "tandem/compat.h"
#include "tandem/config/schema.h"
#include "tandem/io/checkpoint.h"
#include "tandem/train/inference_setup.h"
#include "tandem/train/train_keys.h"
#include "tandem/error.h"
#include "tandem/train/autocast_guard.h"
#include "tandem/train/precision.h"
#include "../test_support.h"

namespace {

using tandem::AutocastGuard;
using tandem::Precision;
using tandem::resolve_precision;

std::string resolve_error(const std::string& value, bool cuda, int cc_major) {
  return tandem::testing::message_of<tandem::UsageError>([&] { resolve_precision(value, cuda, cc_major); });
}

TEST(TrainPrecision, AutoFollowsTheDevice) {
  EXPECT_EQ(resolve_precision("auto", false, 0), Precision::FP32);
  EXPECT_EQ(resolve_precision("auto", true, 7), Precision::FP16);  // T4: compute capability 7.5
  EXPECT_EQ(resolve_precision("auto", true, 8), Precision::BF16);  // A100
  EXPECT_EQ(resolve_precision("auto", true, 9), Precision::BF16);  // H100
}

TEST(TrainPrecision, ExplicitChoices) {
  EXPECT_EQ(resolve_precision("fp32", false, 0), Precision::FP32);
  EXPECT_EQ(resolve_precision("fp32", true, 9), Precision::FP32);
  EXPECT_EQ(resolve_precision("bf16", false, 0), Precision::BF16);
  EXPECT_EQ(resolve_precision("bf16", true, 8), Precision::BF16);
  EXPECT_EQ(resolve_precision("fp16", true, 7), Precision::FP16);
  EXPECT_EQ(resolve_precision("fp16", true, 9), Precision::FP16);
}

TEST(TrainPrecision, RejectsWhatTheDeviceCannotRun) {
  EXPECT_EQ(resolve_error("fp16", false, 0),
            "train.precision = \"fp16\" needs a GPU: autocast on CPU supports bf16 only; use bf16 or fp32");
  EXPECT_EQ(resolve_error("bf16", true, 7),
            "train.precision = \"bf16\" needs a GPU of compute capability 8.0 or more, this one has 7.x; use fp16 or "
            "fp32");
  EXPECT_EQ(resolve_error("half", true, 8), "train.precision must be one of auto|fp32|fp16|bf16, got \"half\"");
}

TEST(TrainPrecision, Names) {
  EXPECT_EQ(tandem::to_string(Precision::FP32), "fp32");
  EXPECT_EQ(tandem::to_string(Precision::FP16), "fp16");
  EXPECT_EQ(tandem::to_string(Precision::BF16), "bf16");
}

void expect_state(const tandem::compat::AutocastState& actual, const tandem::compat::AutocastState& expected) {
  EXPECT_EQ(actual.enabled, expected.enabled);
  EXPECT_EQ(actual.dtype, expected.dtype);
}

// Inference's precision (inference_setup.h): the model's recorded precision
// unless the command names one or forces fp32; where the device lacks it,
// what "auto" gives there.
TEST(InferencePrecision, TheModelsOwnUnlessTheCommandSaysOtherwise) {
  using tandem::inference_precision;
  // A model trained in fp32 (fp16 diverged) is not run under fp16 on a T4.
  EXPECT_EQ(inference_precision("fp32", "auto", false, true, 7).precision, Precision::FP32);
  EXPECT_EQ(inference_precision("fp16", "auto", false, true, 9).precision, Precision::FP16);
  EXPECT_EQ(inference_precision("bf16", "auto", false, true, 8).precision, Precision::BF16);
  // bf16 on a T4 falls back as training there would have.
  const auto t4 = inference_precision("bf16", "auto", false, true, 7);
  EXPECT_EQ(t4.precision, Precision::FP16);
  EXPECT_NE(t4.why.find("lacks"), std::string::npos) << t4.why;
  // No record: "auto" for the device.
  EXPECT_EQ(inference_precision("", "auto", false, true, 7).precision, Precision::FP16);
  EXPECT_EQ(inference_precision("", "auto", false, true, 9).precision, Precision::BF16);
  // The command's own setting wins, checked as training checks it.
  EXPECT_EQ(inference_precision("fp32", "bf16", false, true, 8).precision, Precision::BF16);
  EXPECT_EQ(inference_precision("bf16", "fp32", false, true, 8).precision, Precision::FP32);
  EXPECT_THROW(inference_precision("fp32", "bf16", false, true, 7), tandem::UsageError);
  // dist.inference_fp32 forces fp32; the CPU always runs it.
  EXPECT_EQ(inference_precision("fp16", "fp16", true, true, 7).precision, Precision::FP32);
  EXPECT_EQ(inference_precision("bf16", "bf16", false, false, 0).precision, Precision::FP32);
}

class TrainedPrecision : public tandem::testing::TempDirTest {};

TEST_F(TrainedPrecision, ReadFromTheRecordOrAnOlderFilesConfig) {
  tandem::Schema schema;
  tandem::add_train_keys(schema);
  const auto weights = tandem::TensorSets{{"model", {{"w", torch::ones({2})}}}};
  tandem::save_checkpoint(path("recorded.h5"), weights,
                          {{"precision", std::string("fp32")}, {"config", std::string("[train]\nprecision = \"auto\"\n")}});
  tandem::save_checkpoint(path("older.h5"), weights, {{"config", std::string("[train]\nprecision = \"fp16\"\n")}});
  tandem::save_checkpoint(path("auto.h5"), weights, {{"config", std::string("[train]\nprecision = \"auto\"\n")}});
  tandem::save_checkpoint(path("foreign.h5"), weights, {});
  EXPECT_EQ(tandem::trained_precision(path("recorded.h5"), schema), "fp32");
  EXPECT_EQ(tandem::trained_precision(path("older.h5"), schema), "fp16");
  EXPECT_EQ(tandem::trained_precision(path("auto.h5"), schema), "");
  EXPECT_EQ(tandem::trained_precision(path("foreign.h5"), schema), "");
  EXPECT_EQ(tandem::trained_precision("", schema), "");
}

TEST(TrainAutocastGuard, Bf16OnCpuLowersMatmulsInsideOnly) {
  const at::Tensor a = torch::randn({4, 4});
  const at::Tensor b = torch::randn({4, 4});
  const auto before = tandem::compat::autocast_state(false);
  {
    const AutocastGuard guard(Precision::BF16, false);
    EXPECT_TRUE(tandem::compat::autocast_state(false).enabled);
    EXPECT_EQ(torch::mm(a, b).scalar_type(), torch::kBFloat16);
  }
  EXPECT_EQ(torch::mm(a, b).scalar_type(), torch::kFloat);
  expect_state(tandem::compat::autocast_state(false), before);
}

TEST(TrainAutocastGuard, Fp32ChangesNothing) {
  const at::Tensor a = torch::randn({4, 4});
  const auto before = tandem::compat::autocast_state(false);
  {
    const AutocastGuard guard(Precision::FP32, false);
    expect_state(tandem::compat::autocast_state(false), before);
    EXPECT_EQ(torch::mm(a, a).scalar_type(), torch::kFloat);
  }
  expect_state(tandem::compat::autocast_state(false), before);
}

TEST(TrainAutocastGuard, RestoresTheStateFoundOnEntry) {
  const auto original = tandem::compat::autocast_state(false);
  tandem::compat::set_autocast_state(false, {true, torch::kBFloat16});
  {
    const AutocastGuard outer(Precision::BF16, false);
    { const AutocastGuard inner(Precision::BF16, false); }
    EXPECT_TRUE(tandem::compat::autocast_state(false).enabled);
  }
  expect_state(tandem::compat::autocast_state(false), {true, torch::kBFloat16});
  tandem::compat::set_autocast_state(false, original);
}

// A recomputed block runs again under the state its first run had, also a
// disabled one inside an autocast region.
TEST(TrainAutocastGuard, ASavedStateIsAppliedEvenWhenDisabled) {
  const at::Tensor a = torch::randn({4, 4});
  const AutocastGuard outer(Precision::BF16, false);
  {
    const AutocastGuard off(false, tandem::compat::AutocastState{});
    EXPECT_FALSE(tandem::compat::autocast_state(false).enabled);
    EXPECT_EQ(torch::mm(a, a).scalar_type(), torch::kFloat);
  }
  EXPECT_TRUE(tandem::compat::autocast_state(false).enabled);
  EXPECT_EQ(torch::mm(a, a).scalar_type(), torch::kBFloat16);
}

// train.master_weights = "sharded": the trained matrices go to the compute
// dtype in place (the module sees it), keeping their layout; embeddings,
// biases, norms, the names a task keeps and frozen parameters stay; the
// fp32 values come back, the old storage, for the masters.
TEST(TrainPrecision, WorkingPrecisionTakesTheTrainedMatricesButEmbeddings) {
  torch::nn::Sequential model(torch::nn::Embedding(10, 4), torch::nn::Linear(4, 6),
                              torch::nn::LayerNorm(torch::nn::LayerNormOptions({6})), torch::nn::Conv2d(6, 8, 3),
                              torch::nn::Linear(8, 2));
  model[4]->as<torch::nn::Linear>()->weight.set_requires_grad(false);
  auto* conv = model[3]->as<torch::nn::Conv2d>();
  conv->weight.set_data(conv->weight.contiguous(at::MemoryFormat::ChannelsLast));
  tandem::NamedTensors params;
  for (const auto& p : model->named_parameters())
    if (p.value().requires_grad()) params.emplace_back(p.key(), p.value());
  const std::vector<at::Tensor> before = [&] {
    std::vector<at::Tensor> copies;
    for (const auto& [name, p] : params) copies.push_back(p.detach().clone());
    return copies;
  }();
  const std::vector<std::string> kept = tandem::kept_in_fp32(*model, {"3.weight"});
  EXPECT_EQ(kept, (std::vector<std::string>{"0.weight", "3.weight"}));
  const std::vector<at::Tensor> masters = tandem::to_working_precision(params, Precision::BF16, {"0.weight"});
  for (size_t i = 0; i < params.size(); ++i) {
    const auto& [name, p] = params[i];
    const bool half = name == "1.weight" || name == "3.weight";
    EXPECT_EQ(p.scalar_type(), half ? at::kBFloat16 : at::kFloat) << name;
    EXPECT_EQ(masters[i].defined(), half) << name;
    if (!half) continue;
    EXPECT_TRUE(torch::equal(masters[i], before[i])) << name << "'s master is not its fp32 value";
    EXPECT_TRUE(torch::equal(p, before[i].to(at::kBFloat16))) << name << " is not its value rounded";
  }
  EXPECT_EQ(conv->weight.scalar_type(), at::kBFloat16) << "the module holds the converted tensor";
  EXPECT_TRUE(conv->weight.is_contiguous(at::MemoryFormat::ChannelsLast));
  EXPECT_EQ(model[4]->as<torch::nn::Linear>()->weight.scalar_type(), at::kFloat) << "a frozen matrix is left alone";
  EXPECT_THROW(tandem::to_working_precision(params, Precision::FP32, {}), std::logic_error);
}

TEST(TrainAutocastGuard, Fp16OnCudaLowersMatmuls) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device";
  const at::Tensor a = torch::randn({4, 4}, torch::kCUDA);
  {
    const AutocastGuard guard(Precision::FP16, true);
    EXPECT_EQ(torch::mm(a, a).scalar_type(), torch::kHalf);
  }
  EXPECT_EQ(torch::mm(a, a).scalar_type(), torch::kFloat);
  EXPECT_FALSE(tandem::compat::autocast_state(true).enabled);
}

}  // namespace
