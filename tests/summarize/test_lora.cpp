// LoRA on summarize's GPT-2 (model/lora.h): what PEFT users rely on, with
// the numbers worked out here rather than taken on trust.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "../unit/test_support.h"
#include "model/gpt2.h"
#include "model/gpt2_hf.h"
#include "app/prepare.h"
#include "keys.h"
#include "model/lora.h"
#include "tandem/config/load.h"
#include "tandem/error.h"
#include "tandem/io/safetensors.h"

namespace {

namespace fs = std::filesystem;
using summarize::GPT;
using summarize::GPTConfig;
using summarize::LoraKeys;
using tandem::UsageError;

using LoraTest = tandem::testing::TempDirTest;

GPTConfig lora_test_config() {
  GPTConfig config = GPTConfig::preset("tiny");
  config.n_layer = 2;
  config.vocab_size = 500;
  config.block_size = 32;
  return config;
}

LoraKeys all_targets(int64_t rank = 4, double alpha = 8) {
  LoraKeys s;
  s.targets = summarize::lora_targets();
  s.rank = rank;
  s.alpha = alpha;
  return s;
}

at::Tensor tokens() { return torch::randint(0, 500, {2, 12}, torch::TensorOptions().dtype(torch::kLong)); }

// B starts at zero; trained adapters are not: draw both so the update counts.
void draw_adapters(GPT& model) {
  torch::NoGradGuard no_grad;
  for (auto& p : model->parameters())
    if (p.requires_grad()) p.normal_(0.0, 0.2);
}

TEST(Lora, SettingsRefuseUnknownOrRepeatedTargetsAndRanksOutOfRange) {
  const GPTConfig c = lora_test_config();
  LoraKeys s = all_targets();
  s.targets = {"attn.c_attn", "c_fc"};
  EXPECT_EQ(tandem::testing::usage_error_of([&] { s.validate(c); }),
            "model.lora.targets: unknown layer \"c_fc\" (GPT-2's are attn.c_attn, attn.c_proj, mlp.c_fc, mlp.c_proj)");
  s.targets = {"mlp.c_fc", "mlp.c_fc"};
  EXPECT_EQ(tandem::testing::usage_error_of([&] { s.validate(c); }), "model.lora.targets names \"mlp.c_fc\" twice");
  s.targets = {"mlp.c_fc"};
  s.rank = c.n_embd + 1;
  EXPECT_EQ(tandem::testing::usage_error_of([&] { s.validate(c); }),
            "model.lora.rank must be from 1 to the targeted layers' narrower side, n_embd = 128, got 129");
  s.rank = c.n_embd;
  EXPECT_NO_THROW(s.validate(c));
  s.targets.clear();
  s.rank = 1000;
  EXPECT_NO_THROW(s.validate(c)) << "without targets LoRA is off, and its rank unused";
}

TEST(Lora, KeysAreCheckedWhereTheyAreRead) {
  tandem::Config config(summarize::summarize_schema());
  const auto refused = [&](const std::string& assignment) {
    tandem::Config c = config;
    tandem::apply_set(c, assignment);
    return tandem::testing::usage_error_of([&] { tandem::read_keys<LoraKeys>(c); });
  };
  EXPECT_EQ(refused("model.lora.rank=0"), "model.lora.rank must be >= 1, got 0 (--set)");
  EXPECT_EQ(refused("model.lora.alpha=0"), "model.lora.alpha must be > 0, got 0 (--set)");
  EXPECT_EQ(refused("model.lora.dropout=1"), "model.lora.dropout must be in [0, 1), got 1 (--set)");
  EXPECT_EQ(config.schema().at("model.lora.rank").doc, "LoRA: the adapters' rank r, from 1 to n_embd");
  // Off (no targets), LoRA's other keys stop nothing, as before they were checked.
  tandem::Config off = config;
  tandem::apply_set(off, "model.lora.rank=0");
  EXPECT_FALSE(summarize::model_options(off).lora.enabled());
}

// PEFT's names and shapes, only the adapters trainable, and a start that is
// the base model exactly (B = 0).
TEST(Lora, AdaptersArePeftsAloneTrainableAndStartAtTheBase) {
  torch::manual_seed(1);
  GPT model(lora_test_config());
  model->eval();
  const at::Tensor idx = tokens();
  torch::NoGradGuard no_grad;
  const at::Tensor base = model(idx);
  LoraKeys s = all_targets();
  s.targets = {"attn.c_attn", "mlp.c_proj"};
  summarize::add_lora(model, s);
  std::set<std::string> trained;
  for (const auto& p : model->named_parameters())
    if (p.value().requires_grad()) trained.insert(p.key() + " " + c10::str(p.value().sizes()));
  const std::set<std::string> want = {
      "transformer.h.0.attn.c_attn.lora_A.weight [4, 128]", "transformer.h.0.attn.c_attn.lora_B.weight [384, 4]",
      "transformer.h.0.mlp.c_proj.lora_A.weight [4, 512]",  "transformer.h.0.mlp.c_proj.lora_B.weight [128, 4]",
      "transformer.h.1.attn.c_attn.lora_A.weight [4, 128]", "transformer.h.1.attn.c_attn.lora_B.weight [384, 4]",
      "transformer.h.1.mlp.c_proj.lora_A.weight [4, 512]",  "transformer.h.1.mlp.c_proj.lora_B.weight [128, 4]"};
  EXPECT_EQ(trained, want);
  EXPECT_TRUE(torch::equal(model(idx), base)) << "B = 0: the adapted model starts as its base";
}

// y = x W^T + b + (alpha / r) x A^T B^T, by hand for one layer, and only the
// adapters get gradients.
TEST(Lora, UpdateIsScaledLowRankProductAndOnlyAdaptersLearn) {
  torch::manual_seed(2);
  GPT model(lora_test_config());
  summarize::add_lora(model, all_targets(/*rank=*/2, /*alpha=*/6));
  draw_adapters(model);
  auto& fc = model->transformer->h[0]->as<summarize::Block>()->mlp->c_fc;
  const at::Tensor A = fc->named_parameters()["lora_A.weight"], B = fc->named_parameters()["lora_B.weight"];
  const at::Tensor x = torch::randn({3, 128});
  {
    torch::NoGradGuard no_grad;
    const at::Tensor by_hand = x.matmul(fc->weight.t()) + fc->bias + 3.0 * x.matmul(A.t()).matmul(B.t());
    const at::Tensor hidden = torch::gelu(by_hand, "tanh");
    auto mlp = model->transformer->h[0]->as<summarize::Block>()->mlp;
    const at::Tensor want = hidden.matmul(mlp->c_proj->weight.t()) + mlp->c_proj->bias +
                            3.0 * hidden.matmul(mlp->c_proj->named_parameters()["lora_A.weight"].t())
                                      .matmul(mlp->c_proj->named_parameters()["lora_B.weight"].t());
    EXPECT_TRUE(torch::allclose(mlp->forward(x), want, 1e-5, 1e-5));
  }
  model->train();
  model(tokens()).sum().backward();
  for (const auto& p : model->named_parameters()) {
    const bool adapter = p.key().find(".lora_") != std::string::npos;
    EXPECT_EQ(p.value().grad().defined(), adapter) << p.key();
  }
}

// Merging folds (alpha / r) B A into W and leaves a plain GPT-2: same names
// as a fresh one, same logits as the adapted model.
TEST(Lora, MergeGivesThePlainModelOfTheSameLogits) {
  torch::manual_seed(3);
  GPT model(lora_test_config());
  model->eval();
  const at::Tensor idx = tokens();
  torch::NoGradGuard no_grad;
  const at::Tensor base = model(idx);
  summarize::add_lora(model, all_targets());
  draw_adapters(model);
  const at::Tensor adapted = model(idx);
  summarize::merge_lora(model);
  std::set<std::string> names, plain;
  for (const auto& p : model->named_parameters()) names.insert(p.key());
  for (const auto& p : GPT(lora_test_config())->named_parameters()) plain.insert(p.key());
  EXPECT_EQ(names, plain);
  EXPECT_LT((model(idx) - adapted).abs().max().item<double>(), 1e-4);
  EXPECT_GT((adapted - base).abs().max().item<double>(), 1e-2) << "the adapters must move the logits";
}

// PEFT's layout: its config and its tensor names, the adapters bitwise.
TEST_F(LoraTest, PeftExportHoldsTheAdaptersUnderPeftsNames) {
  torch::manual_seed(4);
  GPT model(lora_test_config());
  LoraKeys s = all_targets(/*rank=*/3, /*alpha=*/5);
  s.targets = {"attn.c_proj"};
  s.dropout = 0.1;
  summarize::add_lora(model, s);
  draw_adapters(model);
  summarize::export_peft_adapter(model, s, path("base"), path("adapter"));
  std::ifstream in(path("adapter/adapter_config.json"));
  const auto config = nlohmann::json::parse(in);
  EXPECT_EQ(config["peft_type"], "LORA");
  EXPECT_EQ(config["task_type"], "CAUSAL_LM");
  EXPECT_EQ(config["r"], 3);
  EXPECT_EQ(config["lora_alpha"], 5.0);
  EXPECT_EQ(config["lora_dropout"], 0.1);
  EXPECT_EQ(config["target_modules"], nlohmann::json::array({"attn.c_proj"}));
  EXPECT_EQ(config["fan_in_fan_out"], true);
  EXPECT_EQ(config["base_model_name_or_path"], fs::absolute(path("base")).string());
  const auto tensors = tandem::read_safetensors(path("adapter/adapter_model.safetensors"));
  ASSERT_EQ(tensors.size(), 4u);
  const auto params = model->named_parameters();
  for (const auto& [name, tensor] : tensors) {
    ASSERT_EQ(name.rfind("base_model.model.transformer.h.", 0), 0u) << name;
    EXPECT_TRUE(torch::equal(tensor, params[name.substr(std::string("base_model.model.").size())])) << name;
  }
}

// The C++ half of tests/peers/lora_vs_peft.py, which runs it with
// TANDEM_PEER_LORA_DIR set after writing there a random transformers GPT-2
// (hf/) and fixed ids (reference.safetensors): adapters on all four
// projections, drawn at random, then their PEFT export (lora/adapter), the
// merged model's Hugging Face export (lora/) and tandem's logits of the
// adapted and the merged model. Without the variable it skips.
TEST(LoraPeer, ExportsForTransformersAndPeft) {
  const char* dir = std::getenv("TANDEM_PEER_LORA_DIR");
  if (!dir) GTEST_SKIP() << "run by tests/peers/lora_vs_peft.py (ctest -L peers)";
  const std::string work = dir;
  const at::Tensor idx = tandem::read_safetensors(work + "/reference.safetensors").at(0).second;  // input_ids alone
  GPT model = summarize::load_hf(work + "/hf");
  model->eval();
  torch::manual_seed(5);
  const LoraKeys s = all_targets(/*rank=*/4, /*alpha=*/8);
  summarize::add_lora(model, s);
  draw_adapters(model);
  torch::NoGradGuard no_grad;
  const at::Tensor adapted = model(idx);
  summarize::export_peft_adapter(model, s, work + "/hf", work + "/lora/adapter");
  summarize::merge_lora(model);
  summarize::export_hf(model, work + "/lora");
  tandem::write_safetensors(work + "/tandem_lora_logits.safetensors", {{"adapted", adapted}, {"merged", model(idx)}});
}

}  // namespace
