// Reading back the config a model file carries: predict and sample rebuild a
// model from it, so it must come back exactly, and a file that cannot say how
// its model was built must be refused with the file named.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <functional>
#include <string>
#include <vector>

#include "tandem/config/checkpoint_config.h"
#include "tandem/config/config.h"
#include "tandem/config/schema.h"
#include "tandem/error.h"
#include "tandem/io/checkpoint.h"
#include "../test_support.h"

namespace tandem {
namespace {

using Strings = std::vector<std::string>;
using ConfigFromCheckpointTest = tandem::testing::TempDirTest;

Schema model_schema() {
  Schema schema;
  schema.add("train.lr", 3e-4, "peak learning rate")
      .add("model.depth", 18, "ResNet depth")
      .add("model.classes", Strings{}, "class names")
      .add("model.stem", "imagenet", "first layers", {"imagenet", "small"});
  return schema;
}

void save_model(const std::string& path, const CheckpointState& state) {
  save_checkpoint(path, {{"model", {{"fc.weight", torch::ones({2, 3})}}}}, state);
}

using tandem::testing::usage_error_of;

TEST_F(ConfigFromCheckpointTest, RoundTripsTheTrainedValues) {
  Config trained(model_schema());
  trained.set("train.lr", 0.05);
  trained.set("model.depth", int64_t{34});
  trained.set("model.classes", Strings{"benign", "malignant"});
  trained.set("model.stem", std::string("small"));
  save_model(path("model.h5"), {{"config", trained.to_toml()}, {"step", int64_t{10}}});

  const Config from_file = config_from_checkpoint(model_schema(), path("model.h5"));
  const Checkpoint checkpoint = load_checkpoint(path("model.h5"));
  ASSERT_TRUE(has_config(checkpoint));
  const Config from_checkpoint = config_from_checkpoint(model_schema(), checkpoint);
  for (const Config* config : {&from_file, &from_checkpoint}) {
    EXPECT_EQ(config->get_double("train.lr"), 0.05);
    EXPECT_EQ(config->get_int("model.depth"), 34);
    EXPECT_EQ(config->get_string_list("model.classes"), (Strings{"benign", "malignant"}));
    EXPECT_EQ(config->get_string("model.stem"), "small");
  }
}

TEST_F(ConfigFromCheckpointTest, KeysTheConfigLeavesOutKeepTheirDefaults) {
  save_model(path("model.h5"), {{"config", std::string("[model]\ndepth = 34\n")}});
  const Config config = config_from_checkpoint(model_schema(), path("model.h5"));
  EXPECT_EQ(config.get_int("model.depth"), 34);
  EXPECT_EQ(config.get_double("train.lr"), 3e-4);
  EXPECT_EQ(config.get_string("model.stem"), "imagenet");
}

TEST_F(ConfigFromCheckpointTest, AFileWithoutConfigIsNamed) {
  save_model(path("weights.h5"), {{"step", int64_t{10}}});
  const std::string expected = path("weights.h5") + ": carries no config";
  EXPECT_NE(usage_error_of([&] { config_from_checkpoint(model_schema(), path("weights.h5")); }).find(expected),
            std::string::npos);
  const Checkpoint checkpoint = load_checkpoint(path("weights.h5"));
  EXPECT_FALSE(has_config(checkpoint));
  EXPECT_NE(usage_error_of([&] { config_from_checkpoint(model_schema(), checkpoint); }).find(expected), std::string::npos);
}

TEST_F(ConfigFromCheckpointTest, AKeyTheSchemaLacksIsNamedWithFileAndLine) {
  // As a model of another program, or of an older version, would carry.
  save_model(path("other.h5"), {{"config", std::string("[model]\ndepth = 34\nwidth = 2\n")}});
  const std::string message = usage_error_of([&] { config_from_checkpoint(model_schema(), path("other.h5")); });
  EXPECT_EQ(message.rfind(path("other.h5") + " (its config):3: unknown key 'model.width'", 0), 0u) << message;
}

TEST_F(ConfigFromCheckpointTest, AValueOfTheWrongTypeIsNamed) {
  save_model(path("model.h5"), {{"config", std::string("[model]\ndepth = \"deep\"\n")}});
  const std::string message = usage_error_of([&] { config_from_checkpoint(model_schema(), path("model.h5")); });
  EXPECT_EQ(message.rfind(path("model.h5") + " (its config):2:", 0), 0u) << message;
  EXPECT_NE(message.find("model.depth"), std::string::npos) << message;
}

TEST_F(ConfigFromCheckpointTest, AMissingFileIsNamed) {
  EXPECT_EQ(usage_error_of([&] { config_from_checkpoint(model_schema(), path("gone.h5")); }),
            path("gone.h5") + ": no such file");
}

TEST_F(ConfigFromCheckpointTest, ChangedSettingsGiveBothValuesAndWhereTheNewOneCameFrom) {
  Schema schema = model_schema();
  schema.add("cmd.out", "", "output folder");
  Config trained(schema);
  trained.set("model.classes", Strings{"benign", "malignant"});
  save_model(path("step.h5"), {{"config", trained.to_toml()}});
  const Config before = config_from_checkpoint(schema, path("step.h5"));

  Config now = before;
  EXPECT_TRUE(changed_settings(before, now, {}).empty());
  now.set("train.lr", 1e-3, "--set");
  now.set("model.classes", Strings{"a", "b"}, "job.toml:4");
  now.set("cmd.out", std::string("elsewhere"), "--out");
  EXPECT_EQ(changed_settings(before, now, {"cmd"}),
            (Strings{"train.lr 0.0003 -> 0.001 (--set)",
                     R"(model.classes ["benign", "malignant"] -> ["a", "b"] (job.toml:4))"}));
  EXPECT_EQ(changed_settings(before, now, {"train.lr", "model"}), (Strings{R"(cmd.out "" -> "elsewhere" (--out))"}));
}

}  // namespace
}  // namespace tandem
