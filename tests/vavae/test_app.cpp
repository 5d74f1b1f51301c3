#include <gtest/gtest.h>
#include <torch/torch.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "app/dit_for_latents.h"
#include "app/dit_task.h"
#include "app/latent_file.h"
#include "app/pipeline.h"
#include "app/sample_keys.h"
#include "app/vae_source.h"
#include "data/user_folders.h"
#include "keys.h"
#include "tandem/nn/recompute.h"
#include "tandem/config/config.h"
#include "tandem/config/load.h"
#include "tandem/error.h"
#include "tandem/train/evaluate.h"
#include "tandem/train/train_keys.h"
#include "../unit/split_objective.h"
#include "../unit/test_support.h"

namespace {

namespace fs = std::filesystem;
using tandem::testing::message_of;

class VavaeUserFolders : public tandem::testing::TempDirTest {
 protected:
  void touch(const std::string& name) {
    fs::create_directories(fs::path(path(name)).parent_path());
    std::ofstream(path(name)) << "x";
  }
};

TEST_F(VavaeUserFolders, UsersAreOneBasedAndCountedToTheHighest) {
  touch("d/train/user3/b.PNG");
  touch("d/train/user3/a.jpg");
  touch("d/train/user1/z.jpeg");
  touch("d/train/user1/notes.txt");
  const auto split = vavae::scan_split(path("d"), "train", "data.root");
  EXPECT_EQ(split.num_users, 3);  // user2 is absent, but user3 keeps label 2
  ASSERT_EQ(split.items.size(), 3u);
  EXPECT_EQ(split.items[0].user_id, 1);
  EXPECT_EQ(fs::path(split.items[1].path).filename(), "a.jpg");
  EXPECT_EQ(split.items[2].user_id, 3);
}

TEST_F(VavaeUserFolders, BadLayoutsNameTheFolder) {
  touch("a/train/user1/a.png");
  touch("a/train/alice/a.png");
  EXPECT_NE(message_of<tandem::UsageError>([&] { vavae::scan_split(path("a"), "train", "data.root"); }).find("alice"),
            std::string::npos);
  touch("b/train/user0/a.png");
  EXPECT_THROW(vavae::scan_split(path("b"), "train", "data.root"), tandem::UsageError);
  fs::create_directories(path("c/train/user2"));
  touch("c/train/user1/a.png");
  EXPECT_NE(message_of<tandem::UsageError>([&] {
              vavae::scan_split(path("c"), "train", "data.root");
            }).find("user2 holds no"),
            std::string::npos);
  touch("e/train/stray.png");
  EXPECT_THROW(vavae::scan_split(path("e"), "train", "data.root"), tandem::UsageError);
  EXPECT_NE(
      message_of<tandem::UsageError>([&] { vavae::scan_split(path("none"), "val", "data.root"); }).find("none/val"),
      std::string::npos);
}

TEST(VavaeUserIdsArg, EveryFormBecomesOneTomlList) {
  const std::set<std::string> commands = {"sample"};
  using V = std::vector<std::string>;
  EXPECT_EQ(vavae::join_user_ids(V{"vavae", "sample", "--user-ids", "1", "2", "3", "--seed", "4"}, commands),
            (V{"vavae", "sample", "--user-ids", "[1, 2, 3]", "--seed", "4"}));
  EXPECT_EQ(vavae::join_user_ids(V{"vavae", "--user-ids", "1,2", "sample"}, commands),
            (V{"vavae", "--user-ids", "[1, 2]", "sample"}));
  EXPECT_EQ(vavae::join_user_ids(V{"--user-ids=[4, 5]"}, commands), (V{"--user-ids", "[4, 5]"}));
}

TEST(VavaeStageSettings, EachStageTrainsWithTheKeysOfItsTable) {
  tandem::Config c(vavae::vavae_schema());
  tandem::apply_set(c, "dit.lr=0.002");
  tandem::apply_set(c, "train.seed=7");
  tandem::apply_set(c, "train.out_dir=\"OUT\"");
  const tandem::TrainKeys dit = vavae::dit_settings(c);
  EXPECT_DOUBLE_EQ(dit.lr, 0.002);
  EXPECT_DOUBLE_EQ(dit.beta2, 0.95);
  EXPECT_DOUBLE_EQ(dit.ema_decay, 0.9999);
  EXPECT_EQ(dit.micro_batch.value, 32);
  EXPECT_EQ(dit.seed, 7);  // the run's keys are shared
  EXPECT_EQ(dit.out_dir, "OUT/dit");
  EXPECT_EQ(dit.key("lr"), "dit.lr");
  EXPECT_EQ(dit.key("min_lr"), "train.min_lr");
  const tandem::TrainKeys vae = vavae::vae_settings(c);
  EXPECT_DOUBLE_EQ(vae.lr, 1e-4);
  EXPECT_DOUBLE_EQ(vae.beta1, 0.5);
  EXPECT_DOUBLE_EQ(vae.grad_clip, 0.0);
  EXPECT_EQ(vae.best_metric, "eval_l1");
  EXPECT_EQ(vae.out_dir, "OUT/vae");
  const tandem::TrainKeys eval = vavae::judge_settings(c);
  EXPECT_EQ(eval.out_dir, "OUT/evaluate/classifier");
  EXPECT_EQ(eval.best_metric, "eval_accuracy");
  EXPECT_EQ(eval.best_mode, "max");
  EXPECT_DOUBLE_EQ(eval.lr, 1e-3);
  EXPECT_DOUBLE_EQ(eval.weight_decay, 1e-4);
  // A model's key under [train] is refused, naming the stage keys to set.
  EXPECT_EQ(message_of<tandem::UsageError>([&] { tandem::apply_set(c, "train.lr=0.1"); }),
            "--set train.lr=0.1: unknown key 'train.lr' (set per model here: vae.lr, dit.lr or eval.lr)");
  // A bad value names the stage's key.
  tandem::apply_set(c, "dit.beta2=1.5");
  EXPECT_NE(
      message_of<tandem::UsageError>([&] { vavae::dit_settings(c); }).find("dit.beta2 must be in [0, 1), got 1.5"),
      std::string::npos);
}

TEST(VavaeDitKeys, TheKeysGiveTheModelOverItsPreset) {
  tandem::Config c(vavae::vavae_schema());
  EXPECT_EQ(c.schema().at("dit.qk_norm").doc, "RMSNorm over each head's q and k");
  tandem::apply_set(c, "dit.preset=tiny");
  tandem::apply_set(c, "dit.depth=3");
  tandem::apply_set(c, "dit.qk_norm=true");
  vavae::LatentSet latents;
  latents.latents = torch::zeros({2, 4, 8, 8});
  latents.num_users = 5;
  const vavae::DitOptions o = vavae::dit_options(tandem::read_keys<vavae::DitKeys>(c), latents);
  EXPECT_EQ(o.depth, 3);         // set
  EXPECT_EQ(o.hidden_size, 64);  // tiny's
  EXPECT_EQ(o.num_heads, 4);
  EXPECT_TRUE(o.qk_norm);
  EXPECT_EQ(o.input_size, 8);  // from the latents
  EXPECT_EQ(o.in_channels, 4);
  EXPECT_EQ(o.num_classes, 5);
  // A value no DiT takes stops the run at the door, naming the key.
  tandem::apply_set(c, "dit.class_dropout=1");
  EXPECT_EQ(message_of<tandem::UsageError>([&] { tandem::read_keys<vavae::DitKeys>(c); }),
            "dit.class_dropout must be in [0, 1), got 1 (--set)");
  tandem::apply_set(c, "dit.class_dropout=0.1");
  tandem::apply_set(c, "dit.depth=-1");
  EXPECT_NE(
      message_of<tandem::UsageError>([&] { tandem::read_keys<vavae::DitKeys>(c); }).find("dit.depth must be >= 0"),
      std::string::npos);
  // A model file's stored keys are read as they were written: they need only
  // make a DiT (a negative size, once ignored, still means the preset's).
  EXPECT_EQ(vavae::dit_options(tandem::read_fields<vavae::DitKeys>(c), latents).depth, 2);
}

TEST(VavaeSampleKeys, ABadSamplerValueStopsAtTheDoor) {
  const auto refused = [](const std::string& assignment) {
    tandem::Config c(vavae::vavae_schema());
    tandem::apply_set(c, assignment);
    return message_of<tandem::UsageError>([&] { tandem::read_keys<vavae::SampleKeys>(c); });
  };
  EXPECT_EQ(refused("sample.shift=0"), "sample.shift must be > 0, got 0 (--set)");
  EXPECT_EQ(refused("sample.user_ids=[2, 0]"), "each value of sample.user_ids must be >= 1, got 0 (--set)");
  EXPECT_EQ(refused("sample.cfg_interval_start=1.5"), "sample.cfg_interval_start must be in [0, 1], got 1.5 (--set)");
  tandem::Config c(vavae::vavae_schema());
  EXPECT_EQ(tandem::read_keys<vavae::SampleKeys>(c).num_steps, 50);
}

TEST(VavaeStageSettings, AModelFileOfAnEarlierVersionStillLoads) {
  // Earlier versions wrote a stage's keys under [train] too.
  tandem::Config c(vavae::vavae_schema());
  tandem::merge_text(c, "[train]\nlr = 0.1\nseed = 3\n[dit]\npreset = \"tiny\"\n", "old.h5");
  EXPECT_EQ(c.get_int("train.seed"), 3);
  EXPECT_EQ(c.get_string("dit.preset"), "tiny");
}

class VavaeLatentFile : public tandem::testing::TempDirTest {};

TEST_F(VavaeLatentFile, RoundTripWithChannelStatistics) {
  vavae::LatentSet set;
  // Channel 0 holds 1, 3 (mean 2, std 1); channel 1 holds 0, 0.
  set.latents = torch::tensor({1.0f, 0.0f, 3.0f, 0.0f}).view({2, 2, 1, 1});
  set.user_ids = torch::tensor({1, 2}, torch::kLong);
  std::tie(set.mean, set.std) = vavae::channel_stats(set.latents);
  EXPECT_TRUE(torch::allclose(set.mean, torch::tensor({2.0f, 0.0f})));
  EXPECT_TRUE(torch::allclose(set.std, torch::tensor({1.0f, 0.0f})));
  set.num_users = 2;
  set.image_size = 32;
  set.vae_path = "vae.h5";
  set.vae_hash = "abc";
  set.vae_preset = "tiny";
  vavae::write_latents(path("lf/train.h5"), set);
  const vavae::LatentSet back = vavae::read_latents(path("lf/train.h5"));
  EXPECT_TRUE(torch::equal(back.latents, set.latents));
  EXPECT_TRUE(torch::equal(back.user_ids, set.user_ids));
  EXPECT_EQ(back.num_users, 2);
  EXPECT_EQ(back.vae_hash, "abc");
  EXPECT_EQ(back.vae_preset, "tiny");
  // Normalised channel 0 is -1, 1; a zero std is not divided by.
  const at::Tensor n = vavae::normalise(set.latents, back);
  EXPECT_TRUE(torch::allclose(n.select(1, 0).flatten(), torch::tensor({-1.0f, 1.0f})));
  EXPECT_TRUE(torch::allclose(vavae::denormalise(n, back), set.latents));
  EXPECT_NE(message_of<tandem::UsageError>([&] { vavae::read_latents(path("lf/val.h5")); }).find("run `vavae extract`"),
            std::string::npos);
}

TEST(VavaeVaeSource, WeightsHashSeesEveryValue) {
  torch::manual_seed(0);
  vavae::Vae a(vavae::VaeOptions::preset("tiny"));
  torch::manual_seed(0);
  vavae::Vae b(vavae::VaeOptions::preset("tiny"));
  EXPECT_EQ(vavae::weights_hash(*a), vavae::weights_hash(*b));
  torch::NoGradGuard no_grad;
  b->post_quant_conv->bias[0].add_(1e-6);
  EXPECT_NE(vavae::weights_hash(*a), vavae::weights_hash(*b));
}

vavae::DitTask tiny_task(double dropout, int64_t samples = 6) {
  vavae::DitTaskOptions o;
  o.dit = vavae::DitOptions::preset("tiny");
  o.dit.input_size = 2;
  o.dit.in_channels = 4;
  o.dit.num_classes = 3;
  o.dit.class_dropout_prob = dropout;
  const at::Tensor x = torch::arange(samples * 16, torch::kFloat).view({samples, 4, 2, 2});
  const at::Tensor y = torch::arange(samples, torch::kLong) % 3;
  return vavae::DitTask(o, x, y, x, y);
}

// A sample's noise and timestep depend on the seed and its index only, not
// on the batch it lands in (so not on the number of ranks).
TEST(VavaeDitTask, DrawsArePerSample) {
  auto task = tiny_task(0.1);
  const auto a = task.make_batch({4, 1, 2}, true, 7);
  const auto b = task.make_batch({1}, true, 7);
  EXPECT_TRUE(torch::equal(a.at("x0")[1], b.at("x0")[0]));
  EXPECT_TRUE(torch::equal(a.at("t")[1], b.at("t")[0]));
  EXPECT_TRUE(torch::equal(a.at("x1")[0], torch::arange(64, 80, torch::kFloat).view({4, 2, 2})));
  EXPECT_FALSE(torch::equal(a.at("x0")[0], a.at("x0")[1]));
  const auto c = task.make_batch({1}, true, 8);
  EXPECT_FALSE(torch::equal(b.at("x0"), c.at("x0")));
}

// dit.best_metric picks the DiT's best model by a figure of sampled images:
// the task then gives it at each evaluation, in the metric's own direction.
TEST(VavaeDitTask, ABestMetricBySamplingIsAMetricOfTheTaskInItsDirection) {
  tandem::Config c(vavae::vavae_schema());
  EXPECT_EQ(vavae::dit_settings(c).best_metric, "eval_loss");
  EXPECT_EQ(vavae::dit_settings(c).best_mode, "min");
  tandem::apply_set(c, "dit.best_metric=\"eval_conditional_accuracy\"");
  EXPECT_EQ(vavae::dit_settings(c).best_metric, "eval_conditional_accuracy");
  EXPECT_EQ(vavae::dit_settings(c).best_mode, "max");
  tandem::apply_set(c, "dit.best_metric=\"eval_kid_mean\"");
  EXPECT_EQ(vavae::dit_settings(c).best_mode, "min");
  EXPECT_NE(message_of<tandem::UsageError>([&] {
              tandem::apply_set(c, "dit.best_metric=\"eval_accuracy\"");
            }).find("dit.best_metric"),
            std::string::npos);

  auto task = tiny_task(0.1);
  EXPECT_EQ(task.metric_names(), std::vector<std::string>{"loss"});
  EXPECT_TRUE(task.collective_metrics(*task.build_model(), tandem::EvalContext{}).empty());
  int calls = 0;
  task.measure_samples(
      [&](torch::nn::Module&, const tandem::EvalContext&) {
        ++calls;
        return tandem::Metrics{{"conditional_accuracy", 0.5}, {"kid_mean", 0.01}};
      },
      {"conditional_accuracy", "kid_mean"});
  EXPECT_EQ(task.metric_names(), (std::vector<std::string>{"loss", "conditional_accuracy", "kid_mean"}));
  EXPECT_EQ(task.metric_mode("loss"), "min");
  EXPECT_EQ(task.metric_mode("conditional_accuracy"), "max");
  EXPECT_EQ(task.metric_mode("kid_mean"), "min");
  EXPECT_EQ(task.metric_mode("precision"), "max");
  EXPECT_EQ(task.collective_metrics(*task.build_model(), tandem::EvalContext{}).at("kid_mean"), 0.01);
  EXPECT_EQ(calls, 1);
}

TEST(VavaeDitTask, LabelDropoutOnlyInTraining) {
  auto task = tiny_task(1.0);
  EXPECT_TRUE(torch::equal(task.make_batch({0, 1, 2}, true, 1).at("y"), torch::tensor({3, 3, 3}, torch::kLong)));
  EXPECT_TRUE(torch::equal(task.make_batch({0, 1, 2}, false, 1).at("y"), torch::tensor({0, 1, 2}, torch::kLong)));
}

// A fresh DiT outputs zero, so its loss is the mean squared target velocity.
TEST(VavaeDitTask, FreshModelLossIsTheTargetsPower) {
  torch::manual_seed(0);
  auto task = tiny_task(0.0);
  auto model = task.build_model();
  const auto batch = task.make_batch({0, 5}, false, 3);
  const at::Tensor expected = (batch.at("x1") - batch.at("x0")).pow(2).mean();
  EXPECT_NEAR(task.loss(*model, batch).mean().item<double>(), expected.item<double>(), 1e-4);
}

// A fresh DiT's output layer is zero, and so are the gradients of all but
// it: the weights moved a little away from their start.
std::shared_ptr<torch::nn::Module> trainable_dit(vavae::DitTask& task) {
  torch::manual_seed(0);
  auto model = task.build_model();
  torch::NoGradGuard no_grad;
  for (auto& p : model->parameters()) p.add_(torch::randn_like(p) * 0.02);
  return model;
}

// The DiT's loss is a mean over samples of equal weight: the same objective
// over micro-batches of any size (all samples valid, drop_last).
TEST(VavaeDitTask, GradientsDoNotDependOnHowTheBatchIsSplit) {
  auto task = tiny_task(0.0, 16);
  auto model = trainable_dit(task);
  std::vector<int64_t> all(16);
  for (int64_t i = 0; i < 16; ++i) all[i] = i;
  const auto whole = tandem::testing::split_gradients(task, *model, all, 16, false, 5);
  for (int64_t micro : {8, 4, 2})
    EXPECT_LT(tandem::testing::relative_difference(tandem::testing::split_gradients(task, *model, all, micro, false, 5),
                                                   whole),
              1e-6)
        << "micro-batches of " << micro;
}

// train.recompute = "blocks": each DiT block (tokens and conditioning in)
// runs again in backward; the gradients are bitwise the same.
TEST(VavaeDitTask, RecomputedBlocksGiveBitwiseTheSameGradients) {
  auto task = tiny_task(0.0, 4);
  auto model = trainable_dit(task);
  const auto batch = tandem::make_loop_batch(task, tandem::MicroBatch{{0, 1, 2, 3}, {1, 1, 1, 1}, {}}, true, 5);
  const auto gradients = [&](bool recompute) {
    model->zero_grad();
    {
      tandem::nn::RecomputeScope scope(recompute);
      task.loss(*model, batch).sum.backward();
    }
    std::vector<at::Tensor> grads;
    for (const auto& p : model->parameters()) grads.push_back(p.grad().defined() ? p.grad().clone() : at::Tensor());
    return grads;
  };
  const auto kept = gradients(false), redone = gradients(true);
  const auto names = model->named_parameters().keys();
  for (size_t i = 0; i < kept.size(); ++i)
    EXPECT_TRUE(kept[i].defined() == redone[i].defined() && (!kept[i].defined() || torch::equal(kept[i], redone[i])))
        << names[i] << (kept[i].defined() ? " differs by " + std::to_string((kept[i] - redone[i]).abs().max().item<double>()) : "");
}

}  // namespace
