// HDF5 files that crash or hang libhdf5 itself, met first by tandem-h5walk in
// a separate process (io/h5_guard.h): a usage error naming the file, never a
// signal or a hang in the program. The damaged files are inputs fuzz_h5 found.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <torch/torch.h>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <string>

#include "tandem/error.h"
#include "tandem/io/h5file.h"
#include "../test_support.h"

namespace {

namespace fs = std::filesystem;
using tandem::H5File;
using tandem::UsageError;
using tandem::testing::message_of;

using H5Guard = tandem::testing::TempDirTest;

// An environment variable set for one test, restored after it.
class EnvOverride {
 public:
  EnvOverride(const char* name, const std::string& value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old, had_ = true;
    ::setenv(name, value.c_str(), 1);
  }
  ~EnvOverride() { had_ ? ::setenv(name_, old_.c_str(), 1) : ::unsetenv(name_); }

 private:
  const char* name_;
  std::string old_;
  bool had_ = false;
};

std::string regression(const std::string& name) {
  return std::string(TANDEM_FUZZ_REGRESSIONS) + "/h5/" + name;
}

// A small file as tandem writes them: datasets of several dtypes in groups,
// attributes on the root and on a dataset.
void write_good(const std::string& path) {
  H5File file(path, H5File::Mode::kCreate);
  file.write("model/fc.weight", torch::arange(6, torch::kFloat).reshape({2, 3}));
  file.write("model/mask", torch::tensor({true, false}));
  file.write("optim/half", torch::ones({4}, torch::kHalf));
  file.write("step", torch::tensor(int64_t{7}));
  file.set_attr("", "config", std::string("[train]\nlr = 0.1\n"));
  file.set_attr("", "step", 7);
  file.set_attr("model/fc.weight", "note", 0.5);
  file.close();
}

// A stand-in for tandem-h5walk: a shell script.
std::string fake_walker(const fs::path& dir, const std::string& body) {
  const std::string path = (dir / "walker.sh").string();
  std::ofstream(path) << "#!/bin/sh\n" << body << "\n";
  ::chmod(path.c_str(), 0755);
  return path;
}

TEST_F(H5Guard, AFileOnWhichLibhdf5MisusesMemoryIsRefusedNamingIt) {
  if (!TANDEM_H5WALK_ASAN) GTEST_SKIP() << "tandem-h5walk is built without AddressSanitizer (this compiler has none)";
  fs::copy_file(regression("libhdf5_memory_error_01.h5"), path("a.h5"));
  const std::string message = message_of<UsageError>([&] { H5File file(path("a.h5")); });
  EXPECT_NE(message.find(path("a.h5") + ": damaged: reading it made the HDF5 library read or free memory it does "
                                        "not own (caught by AddressSanitizer, in tandem-h5walk"),
            std::string::npos)
      << message;
}

TEST_F(H5Guard, AFileOnWhichLibhdf5LoopsForeverIsRefusedAfterTheStallTime) {
  const EnvOverride stall("TANDEM_H5_STALL_S", "1");
  fs::copy_file(regression("libhdf5_loops_forever_1.h5"), path("a.h5"));
  const std::string message = message_of<UsageError>([&] { H5File file(path("a.h5")); });
  EXPECT_NE(message.find(path("a.h5") + ": damaged, or on a disk that stopped answering: the HDF5 library made no "
                                        "progress reading it for 1 s (TANDEM_H5_STALL_S, in tandem-h5walk"),
            std::string::npos)
      << message;
}

TEST_F(H5Guard, DamageTheWalkMeetsIsNamedAsTheProgramNamesIt) {
  // libhdf5 fails to list this object's attributes, and crashed on reading
  // another object's after that.
  fs::copy_file(regression("libhdf5_crashes_after_an_attribute_error.h5"), path("a.h5"));
  EXPECT_EQ(message_of<UsageError>([&] { H5File file(path("a.h5")); }),
            path("a.h5") +
                ": cannot list attributes of 'optim/fc.weight.exp_avg' (damaged or truncated?) (HDF5: bad version "
                "number for datatype message)");
}

TEST_F(H5Guard, GoodFilesPassTheWalkAndReadBack) {
  write_good(path("written.h5"));
  fs::copy_file(path("written.h5"), path("a.h5"));  // a file this process did not write is walked
  const H5File file(path("a.h5"));
  EXPECT_TRUE(torch::equal(file.read("model/fc.weight"), torch::arange(6, torch::kFloat).reshape({2, 3})));
  EXPECT_EQ(file.attr_string("", "config"), "[train]\nlr = 0.1\n");
  EXPECT_EQ(file.attr_double("model/fc.weight", "note"), 0.5);
}

TEST_F(H5Guard, ADatasetPastTheWalksBlockIsReadInRowsAndPasses) {
  // 80 MiB: more than the 64 MiB the walker reads at once.
  const at::Tensor big = torch::arange(int64_t{20} << 20, torch::kFloat).reshape({-1, 1024});
  {
    H5File file(path("written.h5"), H5File::Mode::kCreate);
    file.write("big", big);
  }
  fs::copy_file(path("written.h5"), path("a.h5"));
  EXPECT_TRUE(torch::equal(H5File(path("a.h5")).read_rows("big", 20000, 20480), big.slice(0, 20000, 20480)));
}

// Counts a fake walker's runs, one line each.
int lines_in(const std::string& path) {
  std::ifstream in(path);
  int lines = 0;
  for (std::string line; std::getline(in, line);) ++lines;
  return lines;
}

TEST_F(H5Guard, AWalkerKilledByASignalIsACrashNamedWithTheSignalAndTheFileStaysRefused) {
  write_good(path("written.h5"));
  fs::copy_file(path("written.h5"), path("a.h5"));
  const std::string count = path("walks.txt");
  const EnvOverride walker("TANDEM_H5_WALK",
                           fake_walker(dir_, "printf . >&3; echo >> '" + count + "'; kill -SEGV $$"));
  const std::string message = message_of<UsageError>([&] { H5File file(path("a.h5")); });
  EXPECT_NE(message.find(path("a.h5") + ": damaged: reading it crashed the HDF5 library (signal 11, Segmentation "
                                        "fault, in tandem-h5walk"),
            std::string::npos)
      << message;
  // Met again, the file is refused with the same words and no second walk.
  EXPECT_EQ(message_of<UsageError>([&] { H5File file(path("a.h5")); }), message);
  EXPECT_EQ(lines_in(count), 1);
}

TEST_F(H5Guard, EachFileIsWalkedOnceAndFilesThisProcessWroteNotAtAll) {
  const std::string count = path("walks.txt");
  const EnvOverride walker("TANDEM_H5_WALK", fake_walker(dir_, "printf . >&3; echo >> '" + count + "'"));
  write_good(path("written.h5"));
  H5File(path("written.h5")).read("step");
  fs::copy_file(path("written.h5"), path("a.h5"));
  H5File(path("a.h5")).read("step");
  H5File(path("a.h5")).read("step");
  EXPECT_EQ(lines_in(count), 1);
  // Changed since: walked again.
  fs::remove(path("a.h5"));
  fs::copy_file(path("written.h5"), path("a.h5"));
  H5File(path("a.h5")).read("step");
  EXPECT_EQ(lines_in(count), 2);
}

TEST_F(H5Guard, WithoutTheWalkerFilesAreReadAndTheProgramSaysSoOnce) {
  const EnvOverride walker("TANDEM_H5_WALK", path("nowhere/tandem-h5walk"));
  write_good(path("written.h5"));
  fs::copy_file(path("written.h5"), path("a.h5"));
  fs::copy_file(path("written.h5"), path("b.h5"));
  ::testing::internal::CaptureStderr();
  const at::Tensor a = H5File(path("a.h5")).read("model/fc.weight");
  const at::Tensor b = H5File(path("b.h5")).read("model/fc.weight");
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_TRUE(torch::equal(a, b));
  const std::string warning = path("nowhere/tandem-h5walk") +
                              ": cannot run (No such file or directory): HDF5 files are read without first being "
                              "walked in a separate process";
  EXPECT_NE(err.find(warning), std::string::npos) << err;
  EXPECT_EQ(err.find(warning, err.find(warning) + 1), std::string::npos) << "said twice: " << err;
}

TEST_F(H5Guard, AWalkerThatCannotStartIsNotTheFilesFault) {
  const EnvOverride walker("TANDEM_H5_WALK", fake_walker(dir_, "exit 127"));
  write_good(path("written.h5"));
  fs::copy_file(path("written.h5"), path("a.h5"));
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(H5File(path("a.h5")).attr_int("", "step"), 7);
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("cannot run (it exited before starting: exit status 127)"), std::string::npos) << err;
}

TEST_F(H5Guard, WithChildExitsIgnoredTheWalkIsUnknownAndSaidSo) {
  write_good(path("written.h5"));
  fs::copy_file(path("written.h5"), path("a.h5"));
  const auto old = std::signal(SIGCHLD, SIG_IGN);
  ::testing::internal::CaptureStderr();
  const int64_t step = H5File(path("a.h5")).attr_int("", "step");
  const std::string err = ::testing::internal::GetCapturedStderr();
  std::signal(SIGCHLD, old);
  EXPECT_EQ(step, 7);
  EXPECT_NE(err.find("cannot run (its exit status is lost: No child processes)"), std::string::npos) << err;
}

TEST_F(H5Guard, ABadStallTimeIsAUsageErrorNamingTheVariable) {
  const EnvOverride stall("TANDEM_H5_STALL_S", "soon");
  write_good(path("written.h5"));
  fs::copy_file(path("written.h5"), path("a.h5"));
  EXPECT_EQ(message_of<UsageError>([&] { H5File file(path("a.h5")); }),
            "TANDEM_H5_STALL_S must be a positive number of seconds, not 'soon'");
}

}  // namespace
