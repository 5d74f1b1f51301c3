// carotid's keys stop a bad value at the door, naming the key, the rule, the
// value and where it came from.
#include <gtest/gtest.h>

#include <string>

#include "../unit/test_support.h"
#include "app/image_settings.h"
#include "app/model.h"
#include "data/dataset.h"
#include "keys.h"
#include "tandem/config/config.h"
#include "tandem/config/load.h"
#include "tandem/config/settings.h"
#include "tandem/error.h"

namespace {

template <class Keys>
std::string refused(const std::string& assignment) {
  tandem::Config config(carotid::carotid_schema());
  tandem::apply_set(config, assignment);
  return tandem::testing::message_of<tandem::UsageError>([&] { tandem::read_keys<Keys>(config); });
}

TEST(CarotidKeys, ABadValueStopsAtTheDoor) {
  EXPECT_EQ(refused<carotid::ModelKeys>("model.depth=50"), "model.depth must be 18 or 34, got 50 (--set)");
  EXPECT_EQ(refused<carotid::ModelKeys>("model.dropout=1"), "model.dropout must be in [0, 1), got 1 (--set)");
  EXPECT_EQ(refused<carotid::ImageKeys>("data.channels=2"), "data.channels must be 1 or 3, got 2 (--set)");
  EXPECT_EQ(refused<carotid::ImageKeys>("data.image_size=8"), "data.image_size must be in [16, 4096], got 8 (--set)");
  EXPECT_EQ(refused<carotid::DataKeys>("data.val_ratio=-0.1"), "data.val_ratio must be >= 0, got -0.1 (--set)");
}

TEST(CarotidKeys, TheDefaultsPassTheirChecks) {
  const tandem::Config config(carotid::carotid_schema());
  EXPECT_EQ(tandem::read_keys<carotid::ModelKeys>(config).depth, 18);
  EXPECT_EQ(tandem::read_keys<carotid::ImageKeys>(config).store.size, 224);
  EXPECT_EQ(tandem::read_keys<carotid::DataKeys>(config).max_per_person, 1000);
}

}  // namespace
