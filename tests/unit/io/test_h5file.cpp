#include <gtest/gtest.h>
#include <stdlib.h>
#include <torch/torch.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>

#include "tandem/error.h"
#include "tandem/io/h5file.h"
#include "../test_support.h"

namespace {

namespace fs = std::filesystem;
using tandem::H5File;
using tandem::UsageError;

using H5FileTest = tandem::testing::TempDirTest;

// Runs `fn`, expecting an E whose message contains every one of `parts`.
template <class E, class Fn>
void expect_error(Fn&& fn, std::initializer_list<std::string> parts) {
  try {
    fn();
    ADD_FAILURE() << "expected an exception";
  } catch (const E& e) {
    for (const auto& part : parts) EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
  }
}

TEST_F(H5FileTest, RoundTripsEveryDtype) {
  const auto base = torch::arange(12, torch::kDouble).reshape({3, 4}) - 5;
  const std::vector<std::pair<torch::Dtype, std::string>> dtypes = {
      {torch::kFloat, "float32"},     {torch::kDouble, "float64"}, {torch::kHalf, "float16"},
      {torch::kBFloat16, "bfloat16"}, {torch::kLong, "int64"},     {torch::kInt, "int32"},
      {torch::kShort, "int16"},       {torch::kChar, "int8"},      {torch::kByte, "uint8"},
      {torch::kBool, "bool"}};
  {
    H5File file(path("t.h5"), H5File::Mode::kCreate);
    for (const auto& [dtype, name] : dtypes) {
      const auto values = dtype == torch::kByte   ? base.abs()
                          : dtype == torch::kBool ? base.remainder(3).eq(0)
                                                  : base / 4;
      file.write("dtypes/" + name, values.to(dtype));
    }
  }
  const H5File file(path("t.h5"));
  for (const auto& [dtype, name] : dtypes) {
    SCOPED_TRACE(name);
    const auto values = dtype == torch::kByte ? base.abs() : dtype == torch::kBool ? base.remainder(3).eq(0) : base / 4;
    const auto read = file.read("dtypes/" + name);
    EXPECT_EQ(read.scalar_type(), dtype);
    EXPECT_EQ(read.sizes(), values.sizes());
    EXPECT_TRUE(torch::equal(read, values.to(dtype)));
    EXPECT_EQ(file.attr_string("dtypes/" + name, "dtype"), name);
  }
}

TEST_F(H5FileTest, RoundTripsScalarAndEmptyTensors) {
  {
    H5File file(path("t.h5"), H5File::Mode::kCreate);
    file.write("scalar", torch::tensor(2.5));
    file.write("empty", torch::empty({0, 3}, torch::kLong));
    file.write("empty1d", torch::empty({0}, torch::kHalf));
  }
  const H5File file(path("t.h5"));
  const auto scalar = file.read("scalar");
  EXPECT_EQ(scalar.dim(), 0);
  EXPECT_EQ(scalar.item<double>(), 2.5);
  EXPECT_TRUE(file.shape("scalar").empty());
  EXPECT_EQ(file.read("empty").sizes(), torch::IntArrayRef({0, 3}));
  EXPECT_EQ(file.read("empty").scalar_type(), torch::kLong);
  EXPECT_EQ(file.shape("empty"), (std::vector<int64_t>{0, 3}));
  EXPECT_EQ(file.read("empty1d").sizes(), torch::IntArrayRef({0}));
  EXPECT_EQ(file.read_rows("empty", 0, 0).sizes(), torch::IntArrayRef({0, 3}));
}

TEST_F(H5FileTest, WritesNonContiguousTensorsAsTheyLook) {
  const auto transposed = torch::arange(20, torch::kFloat).reshape({4, 5}).t();
  const auto strided = torch::arange(30, torch::kInt).reshape({5, 6}).slice(1, 1, 6, 2);
  ASSERT_FALSE(transposed.is_contiguous());
  ASSERT_FALSE(strided.is_contiguous());
  {
    H5File file(path("t.h5"), H5File::Mode::kCreate);
    file.write("transposed", transposed);
    file.write("strided", strided);
  }
  const H5File file(path("t.h5"));
  EXPECT_TRUE(torch::equal(file.read("transposed"), transposed));
  EXPECT_TRUE(torch::equal(file.read("strided"), strided));
}

TEST_F(H5FileTest, ReadsRowRanges) {
  const auto rows = torch::arange(40, torch::kLong).reshape({10, 2, 2});
  H5File(path("t.h5"), H5File::Mode::kCreate).write("tokens", rows);
  const H5File file(path("t.h5"));
  EXPECT_TRUE(torch::equal(file.read_rows("tokens", 3, 7), rows.slice(0, 3, 7)));
  EXPECT_TRUE(torch::equal(file.read_rows("tokens", 0, 10), rows));
  EXPECT_TRUE(torch::equal(file.read_rows("tokens", 9, 10), rows.slice(0, 9, 10)));
  EXPECT_EQ(file.read_rows("tokens", 4, 4).sizes(), torch::IntArrayRef({0, 2, 2}));
}

TEST_F(H5FileTest, RowRangeErrorsNameDatasetAndRowCount) {
  H5File(path("t.h5"), H5File::Mode::kCreate).write("tokens", torch::zeros({10, 3}));
  const H5File file(path("t.h5"));
  expect_error<UsageError>([&] { file.read_rows("tokens", 8, 12); }, {path("t.h5"), "'tokens'", "[8, 12)", "10 rows"});
  expect_error<UsageError>([&] { file.read_rows("tokens", -1, 2); }, {"'tokens'", "10 rows"});
  expect_error<UsageError>([&] { file.read_rows("tokens", 5, 4); }, {"'tokens'", "10 rows"});
}

TEST_F(H5FileTest, AttributesOfEachKind) {
  {
    H5File file(path("t.h5"), H5File::Mode::kCreate);
    file.write("group/data", torch::ones({2}));
    file.set_attr("", "step", 1200);
    file.set_attr("", "lr", 3e-4);
    file.set_attr("", "config", std::string("[train]\nlr = 3e-4\n"));
    file.set_attr("group", "note", "héllo");
    file.set_attr("group/data", "scale", 0.5);
    file.set_attr("", "step", int64_t{1300});  // replaces
  }
  const H5File file(path("t.h5"));
  EXPECT_EQ(file.attr_int("", "step"), 1300);
  EXPECT_DOUBLE_EQ(file.attr_double("", "lr"), 3e-4);
  EXPECT_DOUBLE_EQ(file.attr_double("", "step"), 1300.0);
  EXPECT_EQ(file.attr_string("", "config"), "[train]\nlr = 3e-4\n");
  EXPECT_EQ(file.attr_string("group", "note"), "héllo");
  EXPECT_EQ(std::get<double>(file.attr("group/data", "scale")), 0.5);
  EXPECT_TRUE(file.has_attr("", "lr"));
  EXPECT_FALSE(file.has_attr("", "epoch"));
  EXPECT_FALSE(file.has_attr("nowhere", "lr"));
  EXPECT_EQ(file.attr_names(""), (std::vector<std::string>{"config", "lr", "step"}));
  expect_error<UsageError>([&] { file.attr_int("", "epoch"); }, {path("t.h5"), "'epoch'", "root"});
  expect_error<UsageError>([&] { file.attr_int("", "config"); }, {"'config'", "a string, not an int64"});
  expect_error<UsageError>([&] { file.attr_string("missing", "x"); }, {"'missing'"});
}

TEST_F(H5FileTest, ListsChildrenInCreationOrder) {
  {
    H5File file(path("t.h5"), H5File::Mode::kCreate);
    file.write("model/z.weight", torch::zeros({1}));
    file.write("model/a.bias", torch::zeros({1}));
    file.write("model/m.scale", torch::zeros({1}));
    file.write("/deep/er/x/", torch::zeros({1}));
    file.create_group("empty");
  }
  const H5File file(path("t.h5"));
  EXPECT_EQ(file.list(), (std::vector<std::string>{"model", "deep", "empty"}));
  EXPECT_EQ(file.list("model"), (std::vector<std::string>{"z.weight", "a.bias", "m.scale"}));
  EXPECT_EQ(file.list("deep/er"), (std::vector<std::string>{"x"}));
  EXPECT_TRUE(file.list("empty").empty());
  EXPECT_TRUE(file.has("deep/er/x"));
  EXPECT_TRUE(file.has("model"));
  EXPECT_FALSE(file.has("model/nope"));
  EXPECT_FALSE(file.has("nope/deeper"));
  expect_error<UsageError>([&] { file.list("nope"); }, {path("t.h5"), "no group 'nope'"});
  expect_error<UsageError>([&] { file.list("deep/er/x"); }, {"'deep/er/x' is a dataset"});
}

TEST_F(H5FileTest, ErrorsNameFileAndDataset) {
  H5File(path("ckpt.h5"), H5File::Mode::kCreate).write("model/wpe.weight", torch::zeros({2}));
  const H5File file(path("ckpt.h5"));
  expect_error<UsageError>([&] { file.read("model/wte.weight"); },
                           {path("ckpt.h5") + ": no dataset 'model/wte.weight'"});
  expect_error<UsageError>([&] { file.shape("model"); }, {path("ckpt.h5"), "'model' is a group"});

  std::ofstream(path("notes.h5")) << "not hdf5 at all\n";
  expect_error<UsageError>([&] { H5File bad(path("notes.h5")); }, {path("notes.h5") + ": not an HDF5 file"});
  expect_error<UsageError>([&] { H5File missing(path("missing.h5")); }, {path("missing.h5") + ": no such file"});
  expect_error<std::runtime_error>([&] { H5File nowhere(path("no/such/dir/x.h5"), H5File::Mode::kCreate); },
                                   {path("no/such/dir/x.h5"), "cannot create"});
}

TEST_F(H5FileTest, ReplacesDatasetsAndReopensForWriting) {
  {
    H5File file(path("t.h5"), H5File::Mode::kCreate);
    file.write("x", torch::zeros({4}));
    file.write("x", torch::ones({2, 2}, torch::kInt));
  }
  {
    H5File file(path("t.h5"), H5File::Mode::kReadWrite);
    EXPECT_TRUE(torch::equal(file.read("x"), torch::ones({2, 2}, torch::kInt)));
    file.write("y", torch::full({3}, 7.0));
    file.flush();
  }
  const H5File file(path("t.h5"));
  EXPECT_EQ(file.list(), (std::vector<std::string>{"x", "y"}));
  EXPECT_TRUE(torch::equal(file.read("y"), torch::full({3}, 7.0)));
}

TEST_F(H5FileTest, MovesOwnershipOfTheFile) {
  H5File first(path("t.h5"), H5File::Mode::kCreate);
  H5File second = std::move(first);
  second.write("x", torch::ones({1}));
  EXPECT_THROW(first.read("x"), std::logic_error);  // NOLINT(bugprone-use-after-move): moved-from is closed
  second.close();
  EXPECT_TRUE(torch::equal(H5File(path("t.h5")).read("x"), torch::ones({1})));
}

TEST_F(H5FileTest, AppendsRows) {
  const auto rows = torch::arange(24, torch::kInt).reshape({6, 4});
  {
    H5File file(path("t.h5"), H5File::Mode::kCreate);
    file.append("cache/tokens", rows.slice(0, 0, 3));
    file.append("cache/tokens", rows.slice(0, 3, 3));  // no rows: nothing changes
    file.append("cache/tokens", rows.slice(0, 3, 6));
    file.write("fixed", rows);
    expect_error<UsageError>([&] { file.append("cache/tokens", rows.to(torch::kLong)); }, {"'cache/tokens'", "int32"});
    expect_error<UsageError>(
        [&] {
          file.append("cache/tokens", torch::zeros({1, 5}, torch::kInt));
        },
        {"'cache/tokens'", "[4]", "[5]"});
    expect_error<UsageError>([&] { file.append("fixed", rows); }, {"'fixed'", "cannot grow"});
  }
  H5File file(path("t.h5"), H5File::Mode::kReadWrite);
  EXPECT_TRUE(torch::equal(file.read("cache/tokens"), rows));
  EXPECT_TRUE(torch::equal(file.read_rows("cache/tokens", 2, 5), rows.slice(0, 2, 5)));
  file.append("cache/tokens", rows.slice(0, 0, 1));
  EXPECT_EQ(file.shape("cache/tokens"), (std::vector<int64_t>{7, 4}));
  EXPECT_EQ(file.attr_string("cache/tokens", "dtype"), "int32");
}

TEST_F(H5FileTest, WritesCudaTensors) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device";
  const auto values = torch::randn({3, 5}, torch::kCUDA).to(torch::kBFloat16);
  H5File(path("t.h5"), H5File::Mode::kCreate).write("x", values);
  EXPECT_TRUE(torch::equal(H5File(path("t.h5")).read("x"), values.cpu()));
}

// Data prepared in Python: numpy's uint16 token ids widen to int32, float16
// reads as half, and datasets without our `dtype` attribute read by their type.
TEST_F(H5FileTest, ReadsWhatH5pyWrites) {
  if (std::system("/usr/bin/python3 -c 'import h5py' >/dev/null 2>&1") != 0) {
    GTEST_SKIP() << "h5py is not importable by /usr/bin/python3 (Debian: apt-get install python3-h5py)";
  }
  const std::string script =
      "import sys, h5py, numpy as np\n"
      "with h5py.File(sys.argv[1], 'w') as f:\n"
      "    f['tokens'] = np.arange(6, dtype=np.uint16).reshape(3, 2) + 65000\n"
      "    f['half'] = np.array([0.5, -2.0], dtype=np.float16)\n"
      "    f['ids'] = np.arange(4, dtype=np.uint32)\n"
      "    f.attrs['name'] = 'from python'\n"
      "    f.attrs['count'] = 3\n";
  std::ofstream(path("make.py")) << script;
  ASSERT_EQ(std::system(("/usr/bin/python3 " + path("make.py") + " " + path("py.h5")).c_str()), 0);
  const H5File file(path("py.h5"));
  const auto tokens = file.read("tokens");
  EXPECT_EQ(tokens.scalar_type(), torch::kInt);
  EXPECT_TRUE(torch::equal(tokens, torch::arange(6, torch::kInt).reshape({3, 2}) + 65000));
  EXPECT_TRUE(torch::equal(file.read_rows("tokens", 1, 2), torch::tensor({{65002, 65003}}, torch::kInt)));
  EXPECT_TRUE(torch::equal(file.read("half"), torch::tensor({0.5, -2.0}, torch::kHalf)));
  EXPECT_EQ(file.read("ids").scalar_type(), torch::kLong);
  EXPECT_EQ(file.attr_string("", "name"), "from python");
  EXPECT_EQ(file.attr_int("", "count"), 3);
}

}  // namespace
