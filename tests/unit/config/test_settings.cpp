// Settings declared once (tandem/config/settings.h): one list gives the
// schema its keys, defaults, docs and choices, and the reader its fields and
// checks, with messages that name the key, the rule and where the value came
// from.
#include "tandem/config/settings.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "tandem/config/load.h"
#include "tandem/error.h"
#include "../test_support.h"

namespace {

using tandem::testing::message_of;

struct ToyKeys {
  std::string mode = "fast";
  int64_t layers = 2;
  double dropout = 0.1;
  bool norm = false;
  tandem::CountOrAuto batch{8};
  std::vector<int64_t> sizes = {32};
  std::vector<std::string> names;

  template <class Self, class Visit>
  static void each_key(Self& k, Visit&& visit) {
    visit("toy.mode", k.mode, "how it runs", tandem::one_of({"fast", "slow"}));
    visit("toy.layers", k.layers, "layers", tandem::at_least(1));
    visit("toy.dropout", k.dropout, "dropout", tandem::fraction());
    visit("toy.norm", k.norm, "normalise", tandem::any());
    visit("toy.batch", k.batch, "batch", tandem::at_least_or_auto(1));
    visit("toy.sizes", k.sizes, "sizes", tandem::in_range(8, 512));
    visit("toy.names", k.names, "names", tandem::any());
  }
};

tandem::Schema toy_schema() {
  tandem::Schema s;
  tandem::declare_keys<ToyKeys>(s);
  return s;
}

TEST(Settings, TheListGivesTheSchemaEachKeyOnce) {
  const tandem::Schema s = toy_schema();
  ASSERT_EQ(s.keys().size(), 7u);
  EXPECT_EQ(s.at("toy.mode").default_value, tandem::Value(std::string("fast")));
  EXPECT_EQ(s.at("toy.mode").choices, (std::vector<std::string>{"fast", "slow"}));
  EXPECT_EQ(s.at("toy.layers").default_value, tandem::Value(int64_t{2}));
  EXPECT_EQ(s.at("toy.dropout").doc, "dropout");
  EXPECT_EQ(s.at("toy.batch").default_value, tandem::Value(int64_t{8}));
  EXPECT_TRUE(s.at("toy.batch").has_words());  // "auto" stands in for a number
  EXPECT_EQ(s.at("toy.sizes").default_value, tandem::Value(std::vector<int64_t>{32}));
  // Other defaults declare other default values, as an app's do.
  ToyKeys deeper;
  deeper.layers = 12;
  tandem::Schema d;
  tandem::declare_keys(d, deeper);
  EXPECT_EQ(d.at("toy.layers").default_value, tandem::Value(int64_t{12}));
}

TEST(Settings, FieldsAreReadFromTheConfig) {
  const tandem::Schema s = toy_schema();
  tandem::Config c(s);
  tandem::merge_text(c, "[toy]\nmode = \"slow\"\nlayers = 4\nnorm = true\nbatch = \"auto\"\nsizes = [16, 64]\n",
                     "job.toml");
  const ToyKeys k = tandem::read_keys<ToyKeys>(c);
  EXPECT_EQ(k.mode, "slow");
  EXPECT_EQ(k.layers, 4);
  EXPECT_DOUBLE_EQ(k.dropout, 0.1);
  EXPECT_TRUE(k.norm);
  EXPECT_TRUE(k.batch.automatic);
  EXPECT_EQ(k.batch.value, 8);  // the default, for a command that cannot pick
  EXPECT_EQ(k.sizes, (std::vector<int64_t>{16, 64}));
  EXPECT_TRUE(k.names.empty());
}

TEST(Settings, EachRuleSaysWhatItAllows) {
  const tandem::Check depth = tandem::one_of_counts({18, 34});
  EXPECT_EQ(depth.what(), "18 or 34");
  EXPECT_EQ(tandem::one_of_counts({1, 2, 3}).what(), "1, 2 or 3");
  EXPECT_TRUE(depth.holds(34));
  EXPECT_FALSE(depth.holds(50));
  const tandem::Check open = tandem::strictly_between(0, 1);
  EXPECT_EQ(open.what(), "in (0, 1)");
  EXPECT_TRUE(open.holds(0.5));
  EXPECT_FALSE(open.holds(0));
  EXPECT_FALSE(open.holds(1));
  const tandem::Check share = tandem::above_up_to(0, 1);
  EXPECT_EQ(share.what(), "in (0, 1]");
  EXPECT_TRUE(share.holds(1));
  EXPECT_FALSE(share.holds(0));
}

TEST(Settings, ABadValueNamesTheKeyTheRuleAndItsSource) {
  const tandem::Schema s = toy_schema();
  const auto refused = [&](const std::string& text) {
    tandem::Config c(s);
    tandem::merge_text(c, text, "job.toml");
    return message_of<tandem::UsageError>([&] { tandem::read_keys<ToyKeys>(c); });
  };
  EXPECT_EQ(refused("[toy]\nlayers = 0\n"), "toy.layers must be >= 1, got 0 (job.toml:2)");
  EXPECT_EQ(refused("[toy]\ndropout = 1.0\n"), "toy.dropout must be in [0, 1), got 1 (job.toml:2)");
  EXPECT_EQ(refused("[toy]\nbatch = 0\n"), "toy.batch must be >= 1, got 0 (job.toml:2)");
  EXPECT_EQ(refused("[toy]\nsizes = [16, 4]\n"), "each value of toy.sizes must be in [8, 512], got 4 (job.toml:2)");
  // Choices are the schema's: refused when the value is set, before any read.
  tandem::Config c(s);
  EXPECT_NE(message_of<tandem::UsageError>([&] {
              tandem::merge_text(c, "[toy]\nmode = \"slower\"\n", "job.toml");
            }).find("toy.mode"),
            std::string::npos);
}

}  // namespace
