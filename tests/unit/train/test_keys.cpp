// The training settings as users set them: an app's defaults reach the
// schema and --help, values come back from the job file, and a bad value is
// refused naming the key the user wrote, also for a model whose keys live in
// a table of its own.
#include <gtest/gtest.h>

#include <string>

#include "../test_support.h"
#include "tandem/config/config.h"
#include "tandem/config/load.h"
#include "tandem/config/schema.h"
#include "tandem/error.h"
#include "tandem/train/schedule.h"
#include "tandem/train/train_keys.h"

namespace tandem {
namespace {

using testing::message_of;

std::string settings_error(const Config& c, const std::string& table = "train") {
  return message_of<UsageError>([&] { train_settings(c, table); });
}

TEST(TrainKeys, AppDefaultsReachTheSchemaAndTheSettings) {
  TrainKeys d;
  d.out_dir = "runs/app";
  d.micro_batch.value = 16;
  d.lr = 3e-5;
  Schema schema;
  add_train_keys(schema, d);
  EXPECT_EQ(std::get<int64_t>(schema.at("train.micro_batch").default_value), 16);
  EXPECT_EQ(std::get<double>(schema.at("train.eps").default_value), 1e-8);
  EXPECT_EQ(schema.at("obs.gpu_every_s").doc.find("utilisation") != std::string::npos, true);
  EXPECT_EQ(schema.at("train.max_steps").doc, "optimizer steps to train; 0 means train.epochs epochs");
  EXPECT_EQ(schema.at("train.precision").choices, (std::vector<std::string>{"auto", "fp32", "fp16", "bf16"}));

  Config c(schema);
  apply_set(c, "train.lr=0.01");
  apply_set(c, "train.keep_last=0");
  const TrainKeys s = train_settings(c);
  EXPECT_EQ(s.out_dir, "runs/app");
  EXPECT_EQ(s.micro_batch.value, 16);
  EXPECT_FALSE(s.micro_batch.automatic);
  EXPECT_DOUBLE_EQ(s.lr, 0.01);
  EXPECT_EQ(s.keep_last, 0);
  EXPECT_EQ(s.seed, 1337);
  EXPECT_EQ(s.key("lr"), "train.lr");
  EXPECT_EQ(s.key("gpu_every_s"), "obs.gpu_every_s");
}

// "auto" in an integer key: from --set, the job file (quoted or, from the
// command line, bare), a file written back; a command without a Trainer
// reads the app's default.
TEST(TrainKeys, MicroBatchTakesAutoWhereverANumberGoes) {
  TrainKeys d;
  d.micro_batch.value = 16;
  Schema schema;
  add_train_keys(schema, d);
  for (const std::string set : {"train.micro_batch=auto", "train.micro_batch=\"auto\""}) {
    Config c(schema);
    apply_set(c, set);
    const TrainKeys s = train_settings(c);
    EXPECT_TRUE(s.micro_batch.automatic) << set;
    EXPECT_EQ(s.micro_batch.value, 16) << set;
    const std::string path = ::testing::TempDir() + "auto_micro_batch.toml";
    c.write(path);
    EXPECT_TRUE(train_settings(load_config(schema, path, {})).micro_batch.automatic);
    EXPECT_NE(c.to_toml().find("micro_batch = \"auto\""), std::string::npos);
  }
  Config c(schema);
  EXPECT_EQ(message_of<UsageError>([&] { apply_set(c, "train.micro_batch=max"); }),
            "--set train.micro_batch=max: train.micro_batch must be an integer or \"auto\", got 'max'");
  EXPECT_EQ(message_of<UsageError>([&] { apply_set(c, "train.micro_batch=\"max\""); }),
            "--set train.micro_batch=\"max\": train.micro_batch must be an integer or \"auto\", got string \"max\"");
  EXPECT_EQ(message_of<UsageError>([&] { apply_set(c, "train.lr=auto"); }),
            "--set train.lr=auto: train.lr must be a number, got 'auto'");
}

// The message train_settings refuses `set` with.
std::string error_with(const Schema& schema, const std::string& set) {
  Config c(schema);
  apply_set(c, set);
  return settings_error(c);
}

TEST(TrainKeys, ABadValueIsRefusedNamingTheKeyAndWhereItWasSet) {
  Schema schema;
  add_train_keys(schema);
  EXPECT_EQ(error_with(schema, "train.micro_batch=0"), "train.micro_batch must be >= 1, got 0 (--set)");
  EXPECT_EQ(error_with(schema, "train.beta2=1"), "train.beta2 must be in [0, 1), got 1 (--set)");
  EXPECT_EQ(error_with(schema, "train.eps=0"), "train.eps must be > 0, got 0 (--set)");
  EXPECT_EQ(error_with(schema, "train.grad_clip=nan"), "train.grad_clip must be >= 0, got nan (--set)");
  EXPECT_EQ(error_with(schema, "train.out_dir=\"\""), "train.out_dir must not be empty (--set)");
  EXPECT_EQ(error_with(schema, "train.epochs=0"), "train.epochs must be >= 1 when train.max_steps is 0 (--set)");
  Config c(schema);
  apply_set(c, "train.epochs=0");
  apply_set(c, "train.max_steps=5");
  EXPECT_NO_THROW(train_settings(c));
}

// apps/vavae's layout: the run's keys under [train], each model's under its table.
Schema two_model_schema() {
  Schema schema;
  add_run_keys(schema, {}, {"gen", "judge"});
  TrainKeys gen;
  gen.lr = 1e-4;
  add_model_keys(schema, "gen", "train-gen", gen);
  add_model_keys(schema, "judge", "train-judge");
  return schema;
}

TEST(TrainKeys, EachModelReadsItsOwnTableAndTheRunsKeys) {
  const Schema schema = two_model_schema();
  EXPECT_FALSE(schema.has("train.lr"));
  EXPECT_TRUE(schema.has("train.min_lr"));
  EXPECT_EQ(schema.at("gen.max_steps").doc, "train-gen: optimizer steps to train; 0 means gen.epochs epochs");
  Config c(schema);
  apply_set(c, "judge.lr=0.5");
  apply_set(c, "train.seed=9");
  const TrainKeys gen = train_settings(c, "gen");
  const TrainKeys judge = train_settings(c, "judge");
  EXPECT_DOUBLE_EQ(gen.lr, 1e-4);
  EXPECT_DOUBLE_EQ(judge.lr, 0.5);
  EXPECT_EQ(gen.seed, 9);
  EXPECT_EQ(judge.seed, 9);
  EXPECT_EQ(judge.key("micro_batch"), "judge.micro_batch");
  EXPECT_EQ(judge.key("global_batch"), "train.global_batch");
  EXPECT_THROW(judge.key("no_such_setting"), std::logic_error);
}

TEST(TrainKeys, AModelsKeyUnderTrainIsRefusedNamingTheTablesKeys) {
  Config c(two_model_schema());
  EXPECT_EQ(message_of<UsageError>([&] { apply_set(c, "train.warmup_steps=3"); }),
            "--set train.warmup_steps=3: unknown key 'train.warmup_steps' (set per model here: gen.warmup_steps or "
            "judge.warmup_steps)");
  // A model file an earlier layout wrote, with that key under [train], still loads.
  merge_text(c, "[train]\nwarmup_steps = 3\nseed = 4\n", "old.h5");
  EXPECT_EQ(c.get_int("train.seed"), 4);
}

TEST(TrainKeys, MessagesAboutAModelsSettingsNameItsTable) {
  Config c(two_model_schema());
  apply_set(c, "gen.beta1=-1");
  EXPECT_EQ(settings_error(c, "gen"), "gen.beta1 must be in [0, 1), got -1 (--set)");
  // The schedule's checks, made once the run's length is known.
  const Schedule schedule{"cosine", 1e-3, 0.0, 10, 10};
  KeyNames key;
  key.model_table = "gen";
  EXPECT_EQ(message_of<UsageError>([&] { schedule.validate(key); }),
            "gen.warmup_steps (10) must be less than the run's total steps (10)");
}

}  // namespace
}  // namespace tandem
