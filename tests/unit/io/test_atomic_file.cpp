#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "tandem/io/atomic_file.h"
#include "../test_support.h"

namespace {

namespace fs = std::filesystem;
using tandem::replace_atomically;

class AtomicFileTest : public tandem::testing::TempDirTest {
 protected:
  void put(const std::string& at, const std::string& text) { std::ofstream(at, std::ios::binary) << text; }

  std::string slurp(const std::string& at) {
    std::ifstream in(at, std::ios::binary);
    std::stringstream out;
    out << in.rdbuf();
    return out.str();
  }

  std::vector<std::string> names() const {
    std::vector<std::string> out;
    for (const auto& entry : fs::directory_iterator(dir_)) out.push_back(entry.path().filename().string());
    return out;
  }
};

TEST_F(AtomicFileTest, TempPathIsHiddenBesideTheTarget) {
  const std::string pid = std::to_string(::getpid());
  EXPECT_EQ(tandem::temp_path_for(path("out.csv")), path(".out.csv.tmp-" + pid));
  EXPECT_EQ(tandem::temp_path_for("out.csv"), ".out.csv.tmp-" + pid);
}

TEST_F(AtomicFileTest, ReplacesTheFileAndLeavesNoTemporary) {
  put(path("out.txt"), "old\n");
  std::string written_to;
  replace_atomically(path("out.txt"), [&](const std::string& temp) {
    written_to = temp;
    put(temp, "new\n");
  });
  EXPECT_EQ(written_to, tandem::temp_path_for(path("out.txt")));
  EXPECT_EQ(slurp(path("out.txt")), "new\n");
  EXPECT_EQ(names(), std::vector<std::string>{"out.txt"});
}

TEST_F(AtomicFileTest, AFailedWriteKeepsTheOldFileAndRemovesTheTemporary) {
  put(path("out.txt"), "old\n");
  const std::string message = tandem::testing::message_of<std::invalid_argument>([&] {
    replace_atomically(path("out.txt"), [&](const std::string& temp) {
      put(temp, "half");
      throw std::invalid_argument("bad row");
    });
  });
  EXPECT_EQ(message, "bad row");
  EXPECT_EQ(slurp(path("out.txt")), "old\n");
  EXPECT_EQ(names(), std::vector<std::string>{"out.txt"});
}

TEST_F(AtomicFileTest, AWriteThatMakesNoFileNamesTheTemporary) {
  const std::string message = tandem::testing::message_of<std::runtime_error>(
      [&] { replace_atomically(path("out.txt"), [](const std::string&) {}); });
  EXPECT_NE(message.find(tandem::temp_path_for(path("out.txt")) + ": cannot open for fsync: No such file or directory"),
            std::string::npos)
      << message;
  EXPECT_TRUE(fs::is_empty(dir_));
}

TEST_F(AtomicFileTest, AFailedRenameNamesBothFilesAndRemovesTheTemporary) {
  fs::create_directory(path("out.txt"));  // a file cannot be renamed over a directory
  const std::string temp = tandem::temp_path_for(path("out.txt"));
  const std::string message = tandem::testing::message_of<std::runtime_error>(
      [&] { replace_atomically(path("out.txt"), [&](const std::string& at) { put(at, "new\n"); }); });
  EXPECT_NE(message.find(path("out.txt") + ": cannot rename " + temp + " over it: "), std::string::npos) << message;
  EXPECT_NE(message.find("Is a directory"), std::string::npos) << message;
  EXPECT_EQ(names(), std::vector<std::string>{"out.txt"});
}

}  // namespace
