#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <string>

#include "tandem/error.h"
#include "tandem/io/safetensors.h"
#include "../test_support.h"

namespace {

namespace fs = std::filesystem;
using tandem::NamedTensors;
using tandem::UsageError;

using SafetensorsTest = tandem::testing::TempDirTest;

std::string le64(uint64_t n) {
  std::string out;
  for (int i = 0; i < 8; ++i) out += static_cast<char>((n >> (8 * i)) & 0xff);
  return out;
}

template <class T>
std::string bytes_of(std::initializer_list<T> values) {
  std::string out;
  for (const T value : values) out.append(reinterpret_cast<const char*>(&value), sizeof value);
  return out;
}

std::string file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void put_bytes(const std::string& path, const std::string& bytes) { std::ofstream(path, std::ios::binary) << bytes; }

// A file as the format lays it out: length, header, data.
void put_file(const std::string& path, const std::string& header, const std::string& data) {
  put_bytes(path, le64(header.size()) + header + data);
}

const at::Tensor& find(const NamedTensors& tensors, const std::string& name) {
  for (const auto& [key, tensor] : tensors)
    if (key == name) return tensor;
  throw std::out_of_range("no tensor " + name);
}

TEST_F(SafetensorsTest, RoundTripsEveryDtype) {
  const NamedTensors written = {
      {"f32", torch::randn({3, 4})},
      {"f16", torch::randn({5}).to(torch::kHalf)},
      {"bf16", torch::randn({2, 3}).to(torch::kBFloat16)},
      {"f64", torch::randn({2, 2, 2}, torch::kDouble)},
      {"i64", torch::tensor({int64_t{-1}, int64_t{1} << 40, int64_t{7}})},
      {"i32", torch::randint(-1000, 1000, {6}, torch::kInt)},
      {"u8", torch::randint(0, 256, {7}, torch::kByte)},
      {"bool", torch::rand({9}) > 0.5},
      {"scalar", torch::tensor(3.5)},
      {"empty", torch::zeros({0, 4})},
      {"strided", torch::arange(12, torch::kFloat).reshape({3, 4}).t()},
  };
  tandem::write_safetensors(path("t.safetensors"), written);

  const NamedTensors read = tandem::read_safetensors(path("t.safetensors"));
  ASSERT_EQ(read.size(), written.size());
  for (const auto& [name, tensor] : written) {
    const at::Tensor& back = find(read, name);
    EXPECT_EQ(back.scalar_type(), tensor.scalar_type()) << name;
    EXPECT_EQ(back.sizes(), tensor.sizes()) << name;
    EXPECT_TRUE(torch::equal(back, tensor)) << name;
  }
  EXPECT_TRUE(tandem::read_safetensors_metadata(path("t.safetensors")).empty());
}

TEST_F(SafetensorsTest, OrdersLikeTheReferenceWriterAndKeepsEachTensorAligned) {
  tandem::write_safetensors(path("t.safetensors"), {{"b", torch::zeros({3}, torch::kByte)},
                                                    {"z", torch::zeros({1}, torch::kHalf)},
                                                    {"a", torch::zeros({1})},
                                                    {"c", torch::zeros({1}, torch::kLong)},
                                                    {"a2", torch::zeros({1})}});
  std::vector<std::string> names;
  for (const auto& entry : tandem::read_safetensors(path("t.safetensors"))) names.push_back(entry.first);
  EXPECT_EQ(names, (std::vector<std::string>{"c", "a", "a2", "z", "b"}));
  // 21 bytes of data after a padded header: every tensor starts at a multiple of its element size.
  EXPECT_EQ((file_bytes(path("t.safetensors")).size() - 21) % 8, 0u);
}

TEST_F(SafetensorsTest, WritesTheReferenceBytes) {
  tandem::write_safetensors(path("t.safetensors"), {{"attn.0", torch::arange(6, torch::kFloat).reshape({1, 2, 3})}});
  const std::string header = R"({"attn.0":{"dtype":"F32","shape":[1,2,3],"data_offsets":[0,24]}})";
  ASSERT_EQ(header.size(), 64u);  // a multiple of 8 already: no padding
  EXPECT_EQ(file_bytes(path("t.safetensors")), le64(64) + header + bytes_of<float>({0, 1, 2, 3, 4, 5}));

  tandem::write_safetensors(path("m.safetensors"), {}, {{"framework", "pt"}});
  EXPECT_EQ(file_bytes(path("m.safetensors")), le64(40) + R"({"__metadata__":{"framework":"pt"}})" + "     ");
}

TEST_F(SafetensorsTest, ReadsAHandBuiltFile) {
  // Tensors listed out of data order, and the header padded with spaces.
  const std::string header = R"({"second":{"dtype":"U8","shape":[3],"data_offsets":[16,19]},)"
                             R"("__metadata__":{"format":"pt","note":"hand-made"},)"
                             R"("first":{"dtype":"I32","shape":[2,2],"data_offsets":[0,16]}}   )";
  put_file(path("h.safetensors"), header, bytes_of<int32_t>({1, -2, 3, 1 << 30}) + "\x05\x06\xff");

  const NamedTensors read = tandem::read_safetensors(path("h.safetensors"));
  ASSERT_EQ(read.size(), 2u);
  EXPECT_EQ(read[0].first, "first");
  EXPECT_TRUE(torch::equal(read[0].second, torch::tensor({1, -2, 3, 1 << 30}, torch::kInt).reshape({2, 2})));
  EXPECT_EQ(read[1].first, "second");
  EXPECT_TRUE(torch::equal(read[1].second, torch::tensor({5, 6, 255}, torch::kByte)));
  EXPECT_EQ(tandem::read_safetensors_metadata(path("h.safetensors")),
            (tandem::SafetensorsMetadata{{"format", "pt"}, {"note", "hand-made"}}));
}

TEST_F(SafetensorsTest, MetadataRoundTrips) {
  const tandem::SafetensorsMetadata metadata = {{"format", "pt"}, {"step", "1200"}};
  tandem::write_safetensors(path("t.safetensors"), {{"w", torch::ones({2})}}, metadata);
  EXPECT_EQ(tandem::read_safetensors_metadata(path("t.safetensors")), metadata);
}

TEST_F(SafetensorsTest, OverwritesInPlaceAndLeavesNoTemporaryFile) {
  tandem::write_safetensors(path("t.safetensors"), {{"w", torch::ones({2})}});
  tandem::write_safetensors(path("t.safetensors"), {{"v", torch::zeros({3})}});
  const NamedTensors read = tandem::read_safetensors(path("t.safetensors"));
  ASSERT_EQ(read.size(), 1u);
  EXPECT_EQ(read[0].first, "v");
  EXPECT_EQ(std::distance(fs::directory_iterator(dir_), fs::directory_iterator()), 1);
}

TEST_F(SafetensorsTest, RefusesWhatTheFormatCannotHold) {
  const auto refuses = [&](const NamedTensors& tensors, const std::string& expected) {
    try {
      tandem::write_safetensors(path("t.safetensors"), tensors);
      ADD_FAILURE() << "expected std::invalid_argument";
    } catch (const std::invalid_argument& error) {
      EXPECT_NE(std::string(error.what()).find(expected), std::string::npos) << error.what();
    }
  };
  refuses({{"w", torch::ones({2})}, {"w", torch::ones({2})}}, "'w' given twice");
  refuses({{"c", torch::ones({2}, torch::kComplexFloat)}}, "'c' has dtype");
  refuses({{"__metadata__", torch::ones({2})}}, "invalid tensor name");
  EXPECT_FALSE(fs::exists(path("t.safetensors")));
}

// What a loader of a large file relies on: the header alone, then one
// tensor at a time, each as read_safetensors gives it, and a damaged file
// refused before any tensor is handed over.
TEST_F(SafetensorsTest, IndexAndOneAtATimeGiveWhatTheWholeReadGives) {
  tandem::write_safetensors(path("t.safetensors"), {{"a", torch::randn({3, 4})},
                                                    {"b", torch::randn({5}).to(torch::kHalf)},
                                                    {"c", torch::arange(6, torch::kLong).reshape({2, 3})}});
  const NamedTensors whole = tandem::read_safetensors(path("t.safetensors"));
  const auto index = tandem::read_safetensors_index(path("t.safetensors"));
  ASSERT_EQ(index.size(), whole.size());
  size_t i = 0;
  tandem::for_each_safetensor(path("t.safetensors"), [&](const std::string& name, const at::Tensor& tensor) {
    ASSERT_LT(i, whole.size());
    EXPECT_EQ(name, whole[i].first);
    EXPECT_EQ(index[i].name, name);
    EXPECT_EQ(index[i].dtype, tensor.scalar_type());
    EXPECT_EQ(at::IntArrayRef(index[i].shape), tensor.sizes());
    EXPECT_TRUE(torch::equal(tensor, whole[i].second)) << name;
    ++i;
  });
  EXPECT_EQ(i, whole.size());

  const std::string header = R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})";
  put_bytes(path("bad.safetensors"), le64(header.size()) + header + bytes_of<float>({1, 2}) + "xx");
  int taken = 0;
  const std::string message = tandem::testing::usage_error_of([&] {
    tandem::for_each_safetensor(path("bad.safetensors"), [&](const std::string&, const at::Tensor&) { ++taken; });
  });
  EXPECT_NE(message.find("2 bytes after the last tensor"), std::string::npos) << message;
  EXPECT_EQ(taken, 0);
}

TEST_F(SafetensorsTest, CorruptFilesNameTheFileAndTheFault) {
  const std::string file = path("bad.safetensors");
  const std::string f32x2 = bytes_of<float>({1, 2});
  const auto fault = [&](const std::string& bytes) {
    put_bytes(file, bytes);
    const std::string message = tandem::testing::usage_error_of([&] { tandem::read_safetensors(file); });
    EXPECT_NE(message.find(file), std::string::npos) << message;
    return message;
  };
  const auto header_fault = [&](const std::string& header, const std::string& data) {
    return fault(le64(header.size()) + header + data);
  };
  const std::string good = R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})";

  EXPECT_NE(fault("\x10\x00\x00").find("truncated"), std::string::npos);
  EXPECT_NE(fault(le64(500) + good).find("truncated"), std::string::npos);
  EXPECT_NE(fault(le64(uint64_t{1} << 40) + good).find("100 MB"), std::string::npos);
  EXPECT_NE(header_fault(good, f32x2.substr(0, 5)).find("truncated: tensor 'w'"), std::string::npos);
  EXPECT_NE(header_fault(good, f32x2 + "xx").find("2 bytes after the last tensor"), std::string::npos);
  EXPECT_NE(header_fault(R"({"w":{"dtype":"F32",)", f32x2).find("bad JSON"), std::string::npos);
  EXPECT_NE(header_fault("[1,2]", "").find("expected an object"), std::string::npos);
  EXPECT_NE(
      header_fault(R"({"w":{"dtype":"Q4","shape":[2],"data_offsets":[0,8]}})", f32x2).find("unknown dtype \"Q4\""),
      std::string::npos);
  EXPECT_NE(header_fault(R"({"w":{"dtype":"F32","data_offsets":[0,8]}})", f32x2).find("tensor 'w': no \"shape\""),
            std::string::npos);
  EXPECT_NE(header_fault(R"({"w":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", f32x2).find("needs 12"),
            std::string::npos);
  EXPECT_NE(header_fault(R"({"w":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}})", f32x2).find("non-negative"),
            std::string::npos);
  EXPECT_NE(header_fault(R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[8,0]}})", f32x2).find("end before"),
            std::string::npos);
  EXPECT_NE(header_fault(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                         R"("b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
                         f32x2)
                .find("overlap tensor 'a'"),
            std::string::npos);
  EXPECT_NE(
      header_fault(R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})", f32x2).find("leave bytes [0,4] unused"),
      std::string::npos);
  EXPECT_NE(header_fault(R"({"w":{"dtype":"F32","shape":[4611686018427387904,4],"data_offsets":[0,8]}})", f32x2)
                .find("needs more bytes than the file has"),
            std::string::npos);
  EXPECT_NE(header_fault(R"({"__metadata__":{"n":1}})", "").find("__metadata__ must map strings to strings"),
            std::string::npos);
  EXPECT_NE(tandem::testing::usage_error_of([&] { tandem::read_safetensors(path("missing.safetensors")); }).find("cannot open"),
            std::string::npos);
}

}  // namespace
