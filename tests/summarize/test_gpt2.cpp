#include <gtest/gtest.h>
#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "../unit/plan_accuracy.h"
#include "../unit/test_support.h"
#include "app/inference.h"
#include "keys.h"
#include "model/generate.h"
#include "model/gpt2.h"
#include "model/gpt2_hf.h"
#include "tandem/config/load.h"
#include "tandem/error.h"
#include "tandem/io/safetensors.h"

namespace {

namespace fs = std::filesystem;
using summarize::GenerateOptions;
using summarize::GPT;
using summarize::GPTConfig;
using tandem::UsageError;
using TokenRows = std::vector<std::vector<int64_t>>;

using Gpt2HfTest = tandem::testing::TempDirTest;

using tandem::testing::usage_error_of;

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// The tiny preset with a small vocabulary and context: quick to run anywhere.
GPTConfig small_config() {
  GPTConfig config = GPTConfig::preset("tiny");
  config.vocab_size = 1000;
  config.block_size = 64;
  return config;
}

// Matrices drawn wider than GPT-2's init: at N(0, 0.02) a fresh model mostly
// repeats its last token, which would hide a wrong position or mask.
GPT small_model(uint64_t seed = 0) {
  torch::manual_seed(seed);
  GPT model(small_config());
  model->eval();
  torch::NoGradGuard no_grad;
  for (auto& param : model->parameters())
    if (param.dim() == 2) param.normal_(0, 0.3);
  return model;
}

GenerateOptions greedy(int64_t max_new_tokens) {
  GenerateOptions options;
  options.max_new_tokens = max_new_tokens;
  options.eot_token = 999;
  return options;
}

at::Tensor row(const std::vector<int64_t>& tokens) { return torch::tensor(tokens, torch::kLong).unsqueeze(0); }

int64_t count_parameters(const GPT& model) {
  int64_t n = 0;
  for (const auto& p : model->parameters()) n += p.numel();
  return n;
}

void expect_close(const at::Tensor& actual, const at::Tensor& expected, double tolerance = 1e-4) {
  ASSERT_EQ(actual.sizes(), expected.sizes());
  EXPECT_TRUE(torch::allclose(actual, expected, tolerance, tolerance))
      << (actual - expected).abs().max().item<double>();
}

TEST(Gpt2, PresetsAndParameterCounts) {
  // GPT-2 small as nanoGPT counts it: tied head once, position embeddings in.
  EXPECT_EQ(GPTConfig::preset("gpt2").num_parameters(), 124'439'808);
  EXPECT_EQ(GPTConfig::preset("gpt2").num_parameters(true), 124'439'808 - 1024 * 768);
  const GPTConfig medium = GPTConfig::preset("gpt2-medium");
  EXPECT_EQ(std::make_tuple(medium.n_layer, medium.n_head, medium.n_embd), std::make_tuple(24, 16, 1024));
  const GPTConfig large = GPTConfig::preset("gpt2-large");
  EXPECT_EQ(std::make_tuple(large.n_layer, large.n_head, large.n_embd), std::make_tuple(36, 20, 1280));
  const GPTConfig tiny = GPTConfig::preset("tiny");
  EXPECT_EQ(std::make_tuple(tiny.n_layer, tiny.n_head, tiny.n_embd, tiny.block_size, tiny.vocab_size),
            std::make_tuple(4, 4, 128, 256, 50257));
  EXPECT_TRUE(contains(usage_error_of([] { GPTConfig::preset("gpt5"); }), "gpt2-medium"));

  GPTConfig odd = tiny;
  odd.n_head = 3;
  EXPECT_TRUE(contains(usage_error_of([&] { odd.validate(); }), "multiple of n_head"));
}

TEST(Gpt2, FormulaCountsWhatTheModelHas) {
  for (const bool bias : {true, false}) {
    GPTConfig config = small_config();
    config.bias = bias;
    EXPECT_EQ(count_parameters(GPT(config)), config.num_parameters()) << "bias " << bias;
  }
}

TEST(Gpt2, BuildsGpt2SmallWith124MParameters) {
  const GPT model(GPTConfig::preset("gpt2"));
  EXPECT_EQ(count_parameters(model), 124'439'808);
}

TEST(Gpt2, TrainingFlopsCountTheStepsWorkByHand) {
  // tiny: 4 layers, c = 128, GPT-2's 50257 outputs; 10 tokens, 3 predicted.
  // Forward: blocks 2 * 10 * 4 * 12 * 128^2 = 15,728,640; attention over the
  // causal prefix 4 * 2 * 2 * 128 * (10 * 11 / 2) = 112,640; head
  // 2 * 3 * 50257 * 128 = 38,597,376. Training is three forwards.
  const GPTConfig config = GPTConfig::preset("tiny");
  EXPECT_DOUBLE_EQ(config.training_flops(10, 3), 3.0 * (15'728'640 + 112'640 + 38'597'376));
  // The head is most of it: a prompt position costs a fraction of a summary one.
  EXPECT_LT(config.training_flops(11, 3) - config.training_flops(10, 3),
            config.training_flops(10, 4) - config.training_flops(10, 3));
}

TEST(Gpt2, TinyShapesAndHuggingFaceNames) {
  torch::manual_seed(0);
  GPT model(GPTConfig::preset("tiny"));
  const at::Tensor logits = model(torch::randint(0, 50257, {2, 16}));
  EXPECT_EQ(logits.sizes(), (std::vector<int64_t>{2, 16, 50257}));

  const auto params = model->named_parameters();
  EXPECT_EQ(params["transformer.wte.weight"].sizes(), (std::vector<int64_t>{50257, 128}));
  EXPECT_EQ(params["transformer.wpe.weight"].sizes(), (std::vector<int64_t>{256, 128}));
  EXPECT_EQ(params["transformer.h.3.attn.c_attn.weight"].sizes(), (std::vector<int64_t>{384, 128}));
  EXPECT_EQ(params["transformer.h.0.mlp.c_fc.weight"].sizes(), (std::vector<int64_t>{512, 128}));
  EXPECT_EQ(params["transformer.h.0.mlp.c_proj.weight"].sizes(), (std::vector<int64_t>{128, 512}));
  for (const char* name : {"transformer.h.0.ln_1.bias", "transformer.h.0.ln_2.weight",
                           "transformer.h.0.attn.c_proj.bias", "transformer.ln_f.weight"})
    EXPECT_TRUE(params.contains(name)) << name;
  for (const auto& item : params) EXPECT_FALSE(contains(item.key(), "lm_head")) << item.key();
}

TEST(Gpt2, InitialisedAsGpt2) {
  torch::manual_seed(0);
  GPTConfig config = GPTConfig::preset("tiny");
  const GPT model(config);
  const auto params = model->named_parameters();
  const auto std_of = [&](const std::string& suffix) {
    std::vector<at::Tensor> all;
    for (const auto& item : params)
      if (item.key().size() >= suffix.size() &&
          item.key().compare(item.key().size() - suffix.size(), suffix.size(), suffix) == 0)
        all.push_back(item.value().detach().flatten());
    return torch::cat(all).std().item<double>();
  };
  EXPECT_NEAR(std_of("c_proj.weight"), 0.02 / std::sqrt(2.0 * config.n_layer), 0.0005);
  EXPECT_NEAR(std_of("c_attn.weight"), 0.02, 0.0005);
  EXPECT_NEAR(std_of("c_fc.weight"), 0.02, 0.0005);
  EXPECT_NEAR(std_of("wte.weight"), 0.02, 0.0005);
  EXPECT_NEAR(std_of("wpe.weight"), 0.02, 0.0005);
  EXPECT_TRUE(torch::equal(params["transformer.h.1.attn.c_attn.bias"], torch::zeros({384})));
  EXPECT_TRUE(torch::equal(params["transformer.h.1.ln_2.weight"], torch::ones({128})));
}

TEST(Gpt2, FutureTokensDoNotChangePastLogits) {
  GPT model = small_model();
  at::Tensor idx = torch::randint(0, 1000, {2, 12});
  const at::Tensor before = model(idx);
  idx.narrow(1, 8, 4).random_(0, 1000);
  const at::Tensor after = model(idx);
  EXPECT_TRUE(torch::allclose(before.narrow(1, 0, 8), after.narrow(1, 0, 8), 0, 1e-6));
  EXPECT_FALSE(torch::allclose(before.narrow(1, 8, 4), after.narrow(1, 8, 4), 0, 1e-3));
}

TEST(Gpt2, KVCacheGivesTheLogitsOfFullRecomputation) {
  GPT model = small_model();
  torch::NoGradGuard no_grad;
  const at::Tensor idx = torch::randint(0, 1000, {2, 14});
  const at::Tensor full = model(idx);

  summarize::KVCache cache(small_config().n_layer, 14);
  std::vector<at::Tensor> pieces = {model(idx.narrow(1, 0, 9), &cache)};
  for (int64_t t = 9; t < 14; ++t) pieces.push_back(model(idx.narrow(1, t, 1), &cache));
  EXPECT_EQ(cache.length(), 14);
  expect_close(torch::cat(pieces, 1), full);
}

// A one-row head keeps a transposed copy of the embedding: it must follow
// the embedding through an optimizer's in-place step and a replacement.
TEST(Gpt2, OneRowHeadFollowsTheEmbeddingAsItChanges) {
  GPT model = small_model();
  torch::NoGradGuard no_grad;
  at::Tensor& wte = model->transformer->wte->weight;
  const at::Tensor h = torch::randn({1, 1, small_config().n_embd});
  expect_close(model->head(h), torch::matmul(h, wte.t()));
  wte.mul_(-2);
  expect_close(model->head(h), torch::matmul(h, wte.t()));
  wte.set_data(torch::randn_like(wte));
  expect_close(model->head(h), torch::matmul(h, wte.t()));
  expect_close(model->head(h.expand({3, 1, -1})), torch::matmul(h, wte.t()).expand({3, 1, -1}));
}

TEST(Gpt2, GreedyGenerationEqualsRecomputingEveryStep) {
  GPT model = small_model();
  const std::vector<int64_t> prompt = {5, 17, 256, 3, 998, 40};
  const TokenRows generated = summarize::generate(model, {prompt}, greedy(12));
  ASSERT_EQ(generated.size(), 1u);

  torch::NoGradGuard no_grad;
  std::vector<int64_t> sequence = prompt, expected;
  for (int i = 0; i < 12; ++i) {
    const int64_t next = model(row(sequence)).select(1, -1).argmax(-1).item<int64_t>();
    if (next == 999) break;
    expected.push_back(next);
    sequence.push_back(next);
  }
  EXPECT_EQ(generated[0], expected);
}

TEST(Gpt2, BatchedPromptsOfDifferentLengthsGenerateAsAlone) {
  GPT model = small_model(3);
  const TokenRows prompts = {{1, 2, 3}, {900, 45, 12, 7, 7, 300, 2, 81, 5}, {42}, {10, 20, 30, 40, 50}};
  const TokenRows together = summarize::generate(model, prompts, greedy(10));
  ASSERT_EQ(together.size(), prompts.size());
  for (size_t i = 0; i < prompts.size(); ++i)
    EXPECT_EQ(together[i], summarize::generate(model, {prompts[i]}, greedy(10))[0]) << i;
}

TEST(Gpt2, StopsAtEndOfTextPerRowAndLeavesItOut) {
  GPT model = small_model(4);
  const TokenRows prompts = {{1, 2, 3}, {7, 8}};
  const TokenRows plain = summarize::generate(model, prompts, greedy(8));
  ASSERT_EQ(plain[0].size(), 8u);

  // Whatever row 0 says first becomes the end of text.
  GenerateOptions options = greedy(8);
  options.eot_token = plain[0][0];
  const TokenRows stopped = summarize::generate(model, prompts, options);
  EXPECT_TRUE(stopped[0].empty());
  const auto end = std::find(plain[1].begin(), plain[1].end(), options.eot_token);
  EXPECT_EQ(stopped[1], std::vector<int64_t>(plain[1].begin(), end));
}

TEST(Gpt2, LongPromptsKeepTheirLastTokens) {
  GPT model = small_model(5);
  std::vector<int64_t> prompt(100);
  for (size_t i = 0; i < prompt.size(); ++i) prompt[i] = static_cast<int64_t>(i * 7 % 1000);
  const std::vector<int64_t> tail(prompt.end() - (64 - 6), prompt.end());
  EXPECT_EQ(summarize::generate(model, {prompt}, greedy(6)), summarize::generate(model, {tail}, greedy(6)));
  EXPECT_TRUE(contains(usage_error_of([&] { summarize::generate(model, {prompt}, greedy(64)); }), "no room for a prompt"));
}

TEST(Gpt2, SamplingIsSeededAndNarrowsToGreedy) {
  GPT model = small_model(6);
  const TokenRows prompts = {{1, 2, 3}, {4, 5}};
  GenerateOptions options = greedy(10);
  options.sample = true;
  options.temperature = 2.0;
  options.seed = 7;
  const TokenRows first = summarize::generate(model, prompts, options);
  EXPECT_EQ(summarize::generate(model, prompts, options), first);
  options.seed = 8;
  EXPECT_NE(summarize::generate(model, prompts, options), first);

  const TokenRows argmax = summarize::generate(model, prompts, greedy(10));
  GenerateOptions top1 = options;
  top1.top_k = 1;
  EXPECT_EQ(summarize::generate(model, prompts, top1), argmax);
  GenerateOptions nucleus = options;
  nucleus.top_p = 1e-6;
  EXPECT_EQ(summarize::generate(model, prompts, nucleus), argmax);

  GenerateOptions bad = options;
  bad.top_p = 1.5;
  EXPECT_TRUE(contains(usage_error_of([&] { summarize::generate(model, prompts, bad); }), "top_p"));
}

TEST(Gpt2, TokensUntilEndEachRowAtItsFirstEot) {
  const int64_t eot = 50256;
  const at::Tensor tokens = torch::tensor(std::vector<int64_t>{5, 6, eot, 7, eot, 9, eot, eot, 1, 2, 3, 4}).view({3, 4});
  EXPECT_EQ(summarize::tokens_until(tokens, eot), (std::vector<std::vector<int64_t>>{{5, 6}, {}, {1, 2, 3, 4}}));
}

TEST(Gpt2, RowsThatEndLeaveTheBatchWithoutChangingTheOthers) {
  // What a GPU does by default, forced on the CPU: every row's tokens are
  // those of the batch that keeps its ended rows.
  GPT model = small_model(4);
  const TokenRows prompts = {{1, 2, 3}, {7, 8}, {900, 45, 12, 7}, {42}};
  const TokenRows plain = summarize::generate(model, prompts, greedy(8));
  ASSERT_EQ(plain[1].size(), 8u);
  GenerateOptions options = greedy(8);
  options.eot_token = plain[1][2];  // ends row 1 within three tokens, perhaps others
  options.drop_finished = false;
  const TokenRows kept = summarize::generate(model, prompts, options);
  options.drop_finished = true;
  const TokenRows dropped = summarize::generate(model, prompts, options);
  EXPECT_LE(kept[1].size(), 2u);
  EXPECT_EQ(dropped, kept);
}

TEST(Gpt2, GenerationKeysStopABadValueAtTheDoor) {
  const auto refused = [](const std::string& assignment) {
    tandem::Config c(summarize::summarize_schema());
    tandem::apply_set(c, assignment);
    return usage_error_of([&] { tandem::read_keys<summarize::GenKeys>(c); });
  };
  EXPECT_EQ(refused("gen.top_p=0"), "gen.top_p must be in (0, 1], got 0 (--set)");
  EXPECT_EQ(refused("gen.batch=0"), "gen.batch must be >= 1, got 0 (--set)");
  EXPECT_EQ(refused("gen.temperature=-1"), "gen.temperature must be >= 0, got -1 (--set)");
  tandem::Config c(summarize::summarize_schema());
  EXPECT_EQ(tandem::read_keys<summarize::GenKeys>(c).max_new_tokens, 64);
}

TEST(Gpt2, GenerateLeavesTrainingModeAsItWas) {
  GPT model = small_model();
  model->train();
  summarize::generate(model, {{1, 2}}, greedy(2));
  EXPECT_TRUE(model->is_training());
}

TEST(Gpt2, LossCountsMaskedNextTokens) {
  GPT model = small_model();
  const at::Tensor idx = torch::randint(0, 1000, {2, 6});
  const at::Tensor logits = model(idx);
  // Row 0 learns tokens 3..5, row 1 token 1; mask[:, 0] can never count.
  const at::Tensor mask = torch::tensor({1, 0, 0, 1, 1, 1, 1, 1, 0, 0, 0, 0}, torch::kBool).view({2, 6});

  double sum = 0;
  int count = 0;
  for (int b = 0; b < 2; ++b) {
    for (int t = 1; t < 6; ++t) {
      if (!mask[b][t].item<bool>()) continue;
      sum -= torch::log_softmax(logits[b][t - 1], -1)[idx[b][t]].item<double>();
      ++count;
    }
  }
  const at::Tensor loss = summarize::lm_loss(logits, idx, mask);
  EXPECT_NEAR(loss.item<double>(), sum / count, 1e-5);
  loss.backward();
  EXPECT_TRUE(model->transformer->wte->weight.grad().defined());

  const at::Tensor per_token = summarize::next_token_losses(logits, idx);
  EXPECT_EQ(per_token.sizes(), idx.sizes());
  EXPECT_EQ(per_token.select(1, 0).abs().sum().item<double>(), 0);

  const at::Tensor none = summarize::lm_loss(logits, idx, torch::zeros({2, 6}, torch::kBool));
  EXPECT_EQ(none.item<double>(), 0);
}

TEST_F(Gpt2HfTest, ExportThenImportGivesIdenticalLogits) {
  GPT model = small_model(7);
  summarize::export_hf(model, path("hf"));

  const nlohmann::json config = nlohmann::json::parse(std::ifstream(path("hf/config.json")));
  EXPECT_EQ(config["model_type"], "gpt2");
  EXPECT_EQ(config["architectures"], nlohmann::json::array({"GPT2LMHeadModel"}));
  EXPECT_EQ(config["activation_function"], "gelu_new");
  EXPECT_EQ(config["n_layer"], 4);
  EXPECT_EQ(config["n_positions"], 64);
  EXPECT_EQ(config["vocab_size"], 1000);
  EXPECT_EQ(config["eos_token_id"], 50256);

  EXPECT_EQ(tandem::read_safetensors_metadata(path("hf/model.safetensors")),
            (tandem::SafetensorsMetadata{{"format", "pt"}}));
  std::map<std::string, at::Tensor> file;
  for (const auto& [name, tensor] : tandem::read_safetensors(path("hf/model.safetensors"))) file[name] = tensor;
  ASSERT_TRUE(file.count("transformer.h.0.attn.c_attn.weight"));
  EXPECT_EQ(file["transformer.h.0.attn.c_attn.weight"].sizes(), (std::vector<int64_t>{128, 384}));  // Conv1D [in, out]
  EXPECT_EQ(file["transformer.h.0.mlp.c_proj.weight"].sizes(), (std::vector<int64_t>{512, 128}));
  EXPECT_EQ(file.count("lm_head.weight"), 0u);

  GPT loaded = summarize::load_hf(path("hf"));
  loaded->eval();
  const at::Tensor idx = torch::randint(0, 1000, {2, 20});
  EXPECT_TRUE(torch::equal(loaded(idx), model(idx)));
}

TEST_F(Gpt2HfTest, ImportsUnprefixedNamesAndSkipsBuffers) {
  GPT model = small_model(8);
  summarize::export_hf(model, path("hf"));
  // As the hub's gpt2 files are: no "transformer." prefix, mask buffers, a tied lm_head.
  tandem::NamedTensors hub;
  for (const auto& [name, tensor] : tandem::read_safetensors(path("hf/model.safetensors")))
    hub.emplace_back(name.substr(12), tensor);
  hub.emplace_back("h.0.attn.bias", torch::ones({1, 1, 64, 64}).tril());
  hub.emplace_back("h.0.attn.masked_bias", torch::tensor(-1e4));
  hub.emplace_back("lm_head.weight", model->transformer->wte->weight.detach());
  tandem::write_safetensors(path("hf/model.safetensors"), hub);

  GPT loaded = summarize::load_hf(path("hf"));
  loaded->eval();
  const at::Tensor idx = torch::randint(0, 1000, {1, 10});
  EXPECT_TRUE(torch::equal(loaded(idx), model(idx)));
}

TEST_F(Gpt2HfTest, ExportsABiaslessModelWithZeroBiases) {
  torch::manual_seed(9);
  GPTConfig config = small_config();
  config.bias = false;
  GPT model(config);
  model->eval();
  summarize::export_hf(model, path("hf"));
  GPT loaded = summarize::load_hf(path("hf"));
  loaded->eval();
  const at::Tensor idx = torch::randint(0, 1000, {1, 10});
  expect_close(loaded(idx), model(idx), 1e-6);
}

TEST_F(Gpt2HfTest, ImportErrorsNameTheFileAndTheTensor) {
  fs::create_directories(path("empty"));
  EXPECT_TRUE(contains(usage_error_of([&] { summarize::load_hf(path("empty")); }), path("empty/config.json")));

  GPT model = small_model();
  summarize::export_hf(model, path("hf"));
  tandem::NamedTensors tensors = tandem::read_safetensors(path("hf/model.safetensors"));
  for (auto& [name, tensor] : tensors)
    if (name == "transformer.h.1.mlp.c_fc.weight") tensor = torch::zeros({128, 256});
  tensors.erase(std::remove_if(tensors.begin(), tensors.end(),
                               [](const auto& t) { return t.first == "transformer.h.2.ln_1.weight"; }),
                tensors.end());
  tensors.emplace_back("transformer.h.9.attn.c_attn.weight", torch::zeros({2}));
  tandem::write_safetensors(path("hf/model.safetensors"), tensors);
  const std::string message = usage_error_of([&] { summarize::load_hf(path("hf")); });
  EXPECT_TRUE(contains(message, path("hf/model.safetensors"))) << message;
  EXPECT_TRUE(contains(message, "reshaped h.1.mlp.c_fc.weight [128,256] in the file, [128,512] for this model"))
      << message;
  EXPECT_TRUE(contains(message, "missing h.2.ln_1.weight")) << message;
  EXPECT_TRUE(contains(message, "unexpected h.9.attn.c_attn.weight")) << message;

  fs::remove(path("hf/model.safetensors"));
  EXPECT_TRUE(contains(usage_error_of([&] { summarize::load_hf(path("hf")); }), "no model.safetensors"));

  std::ofstream(path("hf/config.json"))
      << R"({"model_type": "gpt2", "n_layer": 2, "n_head": 2, "n_embd": 8, "n_positions": 16})";
  EXPECT_TRUE(contains(usage_error_of([&] { summarize::read_hf_config(path("hf")); }), "no \"vocab_size\""));
  std::ofstream(path("hf/config.json"))
      << R"({"model_type": "gpt2", "n_layer": 2, "n_head": 2, "n_embd": 8, "n_ctx": 16,
                                             "vocab_size": 10, "activation_function": "relu"})";
  EXPECT_TRUE(
      contains(usage_error_of([&] { summarize::read_hf_config(path("hf")); }), "\"activation_function\" is \"relu\""));
  std::ofstream(path("hf/config.json")) << R"({"n_layer": 2, "n_head": 2, "n_embd": 8, "n_ctx": 16, "vocab_size": 10})";
  EXPECT_EQ(summarize::read_hf_config(path("hf")).block_size, 16);
  // A size written as a fraction, or past any integer, is refused, not cut.
  for (const auto& [written, shown] : {std::pair{"2.5", "2.5"}, std::pair{"8.7e32", "8.7e+32"}}) {
    std::ofstream(path("hf/config.json"))
        << R"({"n_layer": )" << written << R"(, "n_head": 2, "n_embd": 8, "n_ctx": 16, "vocab_size": 10})";
    EXPECT_TRUE(contains(usage_error_of([&] { summarize::read_hf_config(path("hf")); }),
                         std::string("\"n_layer\" is ") + shown + ", not a whole number"))
        << written;
  }
}

}  // namespace

// The memory plan's GPT-2 estimate against a measured training step (the
// table in docs/training.md, tests/bench/bench_memory_plan, has the larger presets):
// the tiny preset, 4 sequences of 256, the last 64 positions of each through
// the head as summarize's loss takes them.
TEST(Gpt2, MemoryPlanIsWithin15PercentOfTheMeasuredPeak) {
  namespace F = torch::nn::functional;
  const summarize::GPTConfig config = summarize::GPTConfig::preset("tiny");
  const int64_t batch = 4, seq = 256, predicted = 64;
  const at::Tensor idx = torch::randint(config.vocab_size, {batch, seq}, torch::kLong);
  const at::Tensor at = (torch::arange(batch).unsqueeze(1) * (seq - 1) +
                         torch::arange(seq - 1 - predicted, seq - 1).unsqueeze(0))
                            .reshape({-1});
  const at::Tensor targets = idx.narrow(1, 1, seq - 1).reshape({-1}).index_select(0, at);
  for (bool recompute : {false, true}) {
    const auto f = plan_accuracy::figures(
        [&] { return summarize::GPT(config).ptr(); },
        [&](torch::nn::Module& m) {
          auto& model = static_cast<summarize::GPTImpl&>(m);
          const at::Tensor hidden = model.features(idx);
          const at::Tensor h = hidden.narrow(1, 0, seq - 1).reshape({-1, hidden.size(2)}).index_select(0, at);
          return F::cross_entropy(model.head(h).to(torch::kFloat), targets,
                                  F::CrossEntropyFuncOptions().reduction(torch::kSum));
        },
        [&](bool r) { return config.activation_bytes({batch, 4, r}, seq, predicted); }, recompute);
    EXPECT_NEAR(f.ratio(), 1.0, 0.15) << "recompute " << recompute << ": planned " << f.planned / (1 << 20)
                                      << " MB, measured " << f.measured / (1 << 20) << " MB";
  }
}
