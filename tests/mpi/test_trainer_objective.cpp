// The Trainer's objective does not depend on how the global batch is split:
// one step of 16 samples whose weights differ (as summaries differ in
// length) gives the same gradients as 1 rank x 16, 1 x (4 x 4 accumulation)
// (run on one rank), 2 ranks x 8 and 2 x (2 x 4) (run on two): those of the
// loss sums over the weight of the whole batch, computed directly. The step's
// logged loss is that objective too, and its logged weight the tokens.
// And train.recompute = "blocks" trains bitwise the same weights on one rank
// and on two.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <filesystem>
#include <functional>
#include <fstream>
#include <regex>

#include "../unit/split_objective.h"
#include "tandem/config/command_line.h"
#include "tandem/dist/dist_keys.h"
#include "tandem/dist/world.h"
#include "tandem/train/train_keys.h"
#include "tandem/train/trainer.h"
#include "resnet_task.h"
#include "world_fixture.h"

namespace {

namespace fs = std::filesystem;

constexpr int64_t kSamples = 16;

int64_t tokens_of(int64_t sample) { return 1 + (sample * 5) % 7; }

struct TokenNetImpl : torch::nn::Module {
  TokenNetImpl() : hidden(register_module("hidden", torch::nn::Linear(4, 6))), out(register_module("out", torch::nn::Linear(6, 3))) {}
  at::Tensor forward(const at::Tensor& x) { return out(torch::tanh(hidden(x))); }
  torch::nn::Linear hidden, out;
};

// Sample i: tokens_of(i) tokens of 4 features, each with a target of 3; the
// loss is the squared error summed over the valid tokens, its weight their
// number, as summarize's cross-entropy over summary tokens.
class TokensTask : public tandem::Task {
 public:
  std::shared_ptr<torch::nn::Module> build_model() override { return std::make_shared<TokenNetImpl>(); }
  int64_t train_size() const override { return kSamples; }
  tandem::Batch make_batch(const std::vector<int64_t>& indices, bool, uint64_t) override {
    int64_t len = 1;
    for (int64_t i : indices) len = std::max(len, tokens_of(i));
    const auto n = static_cast<int64_t>(indices.size());
    const auto i = torch::tensor(indices, torch::kLong).to(torch::kFloat).view({n, 1, 1});
    const auto t = torch::arange(len, torch::kFloat).view({1, len, 1});
    auto mask = torch::zeros({n, len}, torch::kBool);
    for (int64_t r = 0; r < n; ++r) mask[r].narrow(0, 0, tokens_of(indices[r])).fill_(true);
    return {{"x", torch::sin(i * 0.7 + t * 1.3 + torch::arange(4, torch::kFloat).view({1, 1, 4}))},
            {"y", torch::cos(i * 0.4 - t * 0.9 + torch::arange(3, torch::kFloat).view({1, 1, 3}))},
            {"mask", mask}};
  }
  tandem::Loss loss(torch::nn::Module& model, const tandem::Batch& b) override {
    const at::Tensor err = (static_cast<TokenNetImpl&>(model).forward(b.at("x")) - b.at("y")).pow(2).sum(-1);
    const at::Tensor counted = (b.at("mask") & b.at("valid").unsqueeze(1)).to(torch::kFloat);
    return {(err * counted).sum(), counted.sum()};
  }
};

// Trains `task` in a fresh out_dir with these `--set`s and dist.device=cpu;
// `after` sees the trainer once it is done. Returns metrics.jsonl (rank 0).
std::string train(tandem::Task& task, const std::vector<std::string>& sets, const tandem::Trainer::GradientHook& hook,
                  const std::function<void(tandem::Trainer&)>& after = {}) {
  auto& world = test_world();
  // One folder per world size: ctest runs the 1- and 2-rank tests at once.
  const fs::path out = fs::temp_directory_path() / ("tandem-trainer-objective-" + std::to_string(world.size()));
  if (world.rank() == 0) fs::remove_all(out);
  world.barrier();
  tandem::Schema schema;
  tandem::add_dist_keys(schema);
  tandem::add_train_keys(schema);
  std::vector<std::string> args = {"test", "--set", "train.out_dir=" + out.string()};
  for (const std::string& set : sets) args.insert(args.end(), {"--set", set});
  for (const char* set : {"obs.gpu_every_s=0", "obs.tensorboard=false", "dist.device=cpu"})
    args.insert(args.end(), {"--set", set});
  std::vector<const char*> argv;
  for (const auto& a : args) argv.push_back(a.c_str());
  std::ostringstream quiet;
  auto cli = tandem::parse_command_line(static_cast<int>(argv.size()), argv.data(), schema, "test", quiet);
  std::string metrics;
  {
    tandem::Trainer trainer(world, cli.config, task, tandem::train_settings(cli.config));
    if (hook) trainer.on_gradients(hook);
    EXPECT_EQ(trainer.run(), 0);
    if (after) after(trainer);
    std::ifstream in(out / "metrics.jsonl");
    metrics.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  world.barrier();
  if (world.rank() == 0) fs::remove_all(out);
  return metrics;
}

struct OneStep {
  std::vector<at::Tensor> weights, grads;  // before the step
  double logged_loss = 0, logged_weight = 0;
};

OneStep one_step(TokensTask& task, int64_t micro_batch) {
  OneStep step;
  const std::string text = train(
      task, {"train.micro_batch=" + std::to_string(micro_batch), "train.global_batch=16", "train.max_steps=1", "train.grad_clip=0"},
      [&](int64_t, const tandem::NamedTensors& params) {
        for (const auto& [name, p] : params) {
          step.weights.push_back(p.detach().clone());
          step.grads.push_back(p.grad().clone());
        }
      });
  // The memory plan heads the run's rows; this task gives no activation
  // estimate, so the plan has none.
  if (test_world().rank() == 0) {
    EXPECT_EQ(text.rfind("{\"step\":0,\"memory_plan_mb\":", 0), 0u) << text.substr(0, 200);
    EXPECT_EQ(text.find("activations_mb"), std::string::npos);
  }
  std::smatch m;
  if (test_world().rank() == 0 && std::regex_search(text, m, std::regex("\"loss\": ?([-0-9.eE+]+)")))
    step.logged_loss = std::stod(m[1]);
  if (test_world().rank() == 0 && std::regex_search(text, m, std::regex("\"loss_weight\": ?([-0-9.eE+]+)")))
    step.logged_weight = std::stod(m[1]);
  return step;
}

TEST(TrainerObjective, GradientsAndLossDoNotDependOnTheSplit) {
  auto& world = test_world();
  TokensTask task;
  std::vector<int64_t> all(kSamples);
  for (int64_t i = 0; i < kSamples; ++i) all[i] = i;
  // 1 rank: 16 x 1 and 4 x 4; 2 ranks: 8 x 1 and 2 x 4.
  for (int64_t micro : {kSamples / world.size(), int64_t{4} / world.size()}) {
    const OneStep step = one_step(task, micro);
    auto model = task.build_model();
    {
      torch::NoGradGuard no_grad;
      auto params = model->parameters();
      ASSERT_EQ(params.size(), step.weights.size());
      for (size_t k = 0; k < params.size(); ++k) params[k].copy_(step.weights[k]);
    }
    const auto expected = tandem::testing::split_gradients(task, *model, all, kSamples);
    const double diff = tandem::testing::relative_difference(step.grads, expected);
    EXPECT_LT(diff, 1e-6) << world.size() << " rank(s) x micro-batch " << micro;
    if (world.rank() != 0) continue;
    const double objective =
        task.loss(*model, tandem::make_loop_batch(task, tandem::MicroBatch{all, std::vector<uint8_t>(kSamples, 1), {}}, true, 0))
            .mean()
            .item<double>();
    EXPECT_NEAR(step.logged_loss, objective, 1e-6 * objective);
    int64_t tokens = 0;
    for (int64_t i = 0; i < kSamples; ++i) tokens += tokens_of(i);
    EXPECT_EQ(step.logged_weight, static_cast<double>(tokens));
    // The fixture tells the objectives apart: a mean within each micro-batch
    // of 4 trains another one.
    const double naive =
        tandem::testing::relative_difference(tandem::testing::split_gradients(task, *model, all, 4, true), expected);
    EXPECT_GT(naive, 1e-2);
    std::printf("%d rank(s) x micro-batch %lld: gradients off by %.2g relative; a mean of micro-batch means by %.2g\n",
                world.size(), static_cast<long long>(micro), diff, naive);
  }
}

// train.recompute = "blocks" on a ResNet with batch norm, in 2 micro-batches
// on one rank or 1 on each of two: GradSync's hooks see each gradient once
// (it throws otherwise), and three steps end in bitwise the same weights and
// running statistics as keeping every activation.
TEST(TrainerObjective, RecomputedStagesTrainBitwiseTheSameWeights) {
  auto& world = test_world();
  std::vector<std::vector<at::Tensor>> ends;
  for (const char* recompute : {"train.recompute=none", "train.recompute=blocks"}) {
    ResNetTask task;
    std::vector<at::Tensor> weights;
    train(task, {recompute, "train.micro_batch=" + std::to_string(4 / world.size()), "train.global_batch=8",
                 "train.max_steps=3", "train.lr=0.01"},
          {}, [&](tandem::Trainer& trainer) {
            for (const auto& p : trainer.model().parameters()) weights.push_back(p.detach().clone());
            for (const auto& b : trainer.model().buffers()) weights.push_back(b.clone());
          });
    ends.push_back(weights);
  }
  ASSERT_EQ(ends[0].size(), ends[1].size());
  for (size_t i = 0; i < ends[0].size(); ++i) EXPECT_TRUE(torch::equal(ends[0][i], ends[1][i])) << "tensor " << i;
}

}  // namespace
