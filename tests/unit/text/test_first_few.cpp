#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tandem/text/message_text.h"

namespace {

using tandem::first_few;
using Items = std::vector<std::string>;

TEST(FirstFew, ListsShortListsWhole) {
  EXPECT_EQ(first_few({}), "");
  EXPECT_EQ(first_few({"a"}), "a");
  EXPECT_EQ(first_few({"a", "b", "c", "d", "e"}), "a, b, c, d, e");
}

TEST(FirstFew, CountsWhatItLeavesOut) {
  const Items items = {"a", "b", "c", "d", "e", "f", "g"};
  EXPECT_EQ(first_few(items), "a, b, c, d, e ... (2 more)");
  EXPECT_EQ(first_few(items, 6), "a, b, c, d, e, f ... (1 more)");
  EXPECT_EQ(first_few(items, 7), "a, b, c, d, e, f, g");
  EXPECT_EQ(first_few(items, 2, ", ... "), "a, b, ... (5 more)");
}

}  // namespace
