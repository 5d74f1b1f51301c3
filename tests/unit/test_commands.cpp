// tandem/commands.h: one table gives dispatch, --help and the errors a user
// reads for a wrong command.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tandem/commands.h"
#include "tandem/error.h"
#include "test_support.h"

namespace {

using tandem::Command;
using tandem::find_command;

const std::vector<Command> kTable = {{"train", "train a model (the default)", nullptr, true},
                                     {"predict", "score images\nwith a second line", nullptr},
                                     {"plot", "charts", nullptr}};

std::string error_of(const std::vector<std::string>& positional, const std::string& fallback = "") {
  return tandem::testing::message_of<tandem::UsageError>([&] { find_command(kTable, positional, fallback); });
}

TEST(Commands, FindsTheNamedCommandOrTheFallback) {
  EXPECT_EQ(find_command(kTable, {"predict"}).name, "predict");
  EXPECT_EQ(find_command(kTable, {}, "train").name, "train");
  EXPECT_TRUE(find_command(kTable, {"train"}).checkpoints_on_signal);
  EXPECT_FALSE(find_command(kTable, {"plot"}).checkpoints_on_signal);
}

TEST(Commands, ErrorsListEveryCommandInTableOrder) {
  EXPECT_EQ(error_of({"trian"}), "unknown command 'trian': expected train, predict or plot");
  EXPECT_EQ(error_of({}), "no command: expected train, predict or plot");
  EXPECT_EQ(error_of({"predict", "extra"}), "unexpected argument 'extra' after predict");
}

TEST(Commands, HelpAlignsEveryCommandAndIndentsFurtherLines) {
  EXPECT_EQ(tandem::commands_help(kTable),
            "Commands:\n"
            "  train    train a model (the default)\n"
            "  predict  score images\n"
            "           with a second line\n"
            "  plot     charts");
}

}  // namespace
