#pragma once
// What many unit tests need: a fresh directory per test, and the message of the
// error an action throws (tests assert on what users will read).
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <functional>
#include <string>

#include "tandem/error.h"

namespace tandem::testing {

class TempDirTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (std::filesystem::temp_directory_path() / "tandem-test-XXXXXX").string();
    ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::string path(const std::string& name) const { return (dir_ / name).string(); }

  std::filesystem::path dir_;
};

// The message of the E that `action` throws; a test failure if it throws none.
template <class E, class Action>
std::string message_of(Action action) {
  try {
    action();
  } catch (const E& error) {
    return error.what();
  }
  ADD_FAILURE() << "expected an exception";
  return "";
}

// The message of the UsageError `action` throws: how most refusals speak.
inline std::string usage_error_of(const std::function<void()>& action) { return message_of<UsageError>(action); }

}  // namespace tandem::testing
