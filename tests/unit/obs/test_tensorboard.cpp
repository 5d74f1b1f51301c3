// TensorBoard's record framing: the CRC-32C check value, and a file whose
// every record carries a length and data that match their masked CRCs.
// (tests/peers/tensorboard_reads_events.py reads the events with
// TensorBoard itself.)
#include <gtest/gtest.h>

#include <torch/torch.h>

#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "../test_support.h"
#include "tandem/image/write_png.h"
#include "tandem/obs/tensorboard.h"

namespace tandem {
namespace {

// Each record's data, after checking both CRCs.
std::vector<std::string> records(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  const std::string file((std::istreambuf_iterator<char>(in)), {});
  std::vector<std::string> out;
  size_t at = 0;
  auto u32 = [&](size_t pos) {
    uint32_t v;
    std::memcpy(&v, file.data() + pos, 4);
    return v;
  };
  while (at < file.size()) {
    uint64_t length;
    std::memcpy(&length, file.data() + at, 8);
    EXPECT_EQ(u32(at + 8), masked_crc32c(file.substr(at, 8)));
    const std::string data = file.substr(at + 12, length);
    EXPECT_EQ(u32(at + 12 + length), masked_crc32c(data));
    out.push_back(data);
    at += 12 + length + 4;
  }
  EXPECT_EQ(at, file.size());
  return out;
}

TEST(TensorBoard, Crc32cIsCastagnolis) {
  EXPECT_EQ(crc32c("123456789"), 0xE3069283u);  // the standard check value
  EXPECT_EQ(crc32c(""), 0u);
}

class TensorBoardFile : public testing::TempDirTest {};

TEST_F(TensorBoardFile, EveryRecordIsFramedAndTheFirstNamesTheVersion) {
  TensorBoardWriter tb(path("tb"));
  tb.scalar("loss", 1, 2.5);
  tb.row({{"step", int64_t{2}}, {"loss", 2.0}, {"lr", 1e-3}, {"phase", std::string("train")}});
  tb.image("grid", 2, std::string("\x89PNG", 4), 1, 1, 3);
  tb.flush();
  const auto data = records(tb.path());
  ASSERT_EQ(data.size(), 5u);  // version, loss, the row's two numbers, the image
  EXPECT_NE(data[0].find("brain.Event:2"), std::string::npos);
  EXPECT_NE(data[1].find("loss"), std::string::npos);
  EXPECT_NE(data[3].find("lr"), std::string::npos);
  EXPECT_NE(data[4].find("\x89PNG"), std::string::npos);
}

TEST_F(TensorBoardFile, WritersOfOneSecondGetFilesOfTheirOwn) {
  TensorBoardWriter a(path("tb")), b(path("tb"));
  EXPECT_NE(a.path(), b.path());
  b.scalar("loss", 1, 1.0);
  b.flush();
  EXPECT_EQ(records(a.path()).size(), 1u);
  EXPECT_EQ(records(b.path()).size(), 2u);
}

TEST_F(TensorBoardFile, APngFileIsStoredAsItsBytes) {
  const std::string png = path("grid.png");
  image::write_png(png, torch::rand({3, 5, 7}));
  std::ifstream in(png, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), {});
  TensorBoardWriter tb(path("tb"));
  tb.png_file("samples/grid", 4, png);
  tb.flush();
  const auto data = records(tb.path());
  ASSERT_EQ(data.size(), 2u);
  EXPECT_NE(data[1].find("samples/grid"), std::string::npos);
  EXPECT_NE(data[1].find(bytes), std::string::npos);
}

TEST_F(TensorBoardFile, AFileThatIsNotAPngIsRefusedByName) {
  const std::string fake = path("fake.png");
  std::ofstream(fake) << "not an image";
  TensorBoardWriter tb(path("tb"));
  try {
    tb.png_file("x", 0, fake);
    FAIL() << "no error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find(fake), std::string::npos) << e.what();
  }
  EXPECT_THROW(tb.png_file("x", 0, path("missing.png")), std::runtime_error);
}

TEST_F(TensorBoardFile, GpuSamplesBecomeScalarsOfWhatWasReported) {
  GpuSample g;
  g.index = 3;
  g.util_percent = 97;
  g.mem_used_bytes = uint64_t{3} << 30;  // no temperature reported
  TensorBoardWriter tb(path("tb"));
  tb.gpus(12, {g});
  const auto data = records(tb.path());
  ASSERT_EQ(data.size(), 3u);
  EXPECT_NE(data[1].find("gpu3/util_percent"), std::string::npos);
  EXPECT_NE(data[2].find("gpu3/mem_used_gib"), std::string::npos);
  float value;  // the last field of the record's summary value: 3 GiB as a float
  std::memcpy(&value, data[2].data() + data[2].size() - 4, 4);
  EXPECT_EQ(value, 3.0f);
}

}  // namespace
}  // namespace tandem
