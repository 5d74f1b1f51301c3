#include "tandem/obs/tensorboard.h"

#include <unistd.h>

#include <boost/crc.hpp>
#include <chrono>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <iterator>
#include <stdexcept>

#include "stb_image.h"
#include "tandem/io/stream_error.h"

namespace tandem {
namespace {

// Protocol buffers' wire format, the part these messages need.
enum WireType : uint32_t { kVarint = 0, kFixed64 = 1, kBytes = 2, kFixed32 = 5 };

void varint(std::string& out, uint64_t v) {
  while (v >= 0x80) {
    out += static_cast<char>((v & 0x7f) | 0x80);
    v >>= 7;
  }
  out += static_cast<char>(v);
}

void key(std::string& out, uint32_t field, WireType type) { varint(out, (field << 3) | type); }

template <class T>
void fixed(std::string& out, uint32_t field, T value) {
  key(out, field, sizeof(T) == 8 ? kFixed64 : kFixed32);
  char bytes[sizeof(T)];
  std::memcpy(bytes, &value, sizeof(T));  // little-endian, as the wire format is
  out.append(bytes, sizeof(T));
}

void bytes(std::string& out, uint32_t field, const std::string& data) {
  key(out, field, kBytes);
  varint(out, data.size());
  out += data;
}

void integer(std::string& out, uint32_t field, int64_t value) {
  key(out, field, kVarint);
  varint(out, static_cast<uint64_t>(value));
}

double now_s() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::string fixed_bytes(uint64_t value, size_t n) {
  std::string out(n, '\0');
  std::memcpy(out.data(), &value, n);
  return out;
}

}  // namespace

uint32_t crc32c(const std::string& data) {
  boost::crc_optimal<32, 0x1EDC6F41, 0xFFFFFFFF, 0xFFFFFFFF, true, true> crc;
  crc.process_bytes(data.data(), data.size());
  return crc.checksum();
}

uint32_t masked_crc32c(const std::string& data) {
  const uint32_t crc = crc32c(data);
  return ((crc >> 15) | (crc << 17)) + 0xa282ead8u;
}

TensorBoardWriter::TensorBoardWriter(const std::string& dir) {
  std::filesystem::create_directories(dir);
  char host[256] = "host";
  gethostname(host, sizeof host - 1);
  const std::string base = dir + "/events.out.tfevents." + std::to_string(static_cast<int64_t>(now_s())) + "." +
                           host + "." + std::to_string(getpid());
  path_ = base;
  for (int n = 1; std::filesystem::exists(path_); ++n) path_ = base + "." + std::to_string(n);
  out_.open(path_, std::ios::binary | std::ios::app);
  if (!out_) throw std::runtime_error("cannot write TensorBoard events to '" + path_ + "'");
  std::string version;
  fixed(version, 1, now_s());
  bytes(version, 3, "brain.Event:2");
  std::lock_guard<std::mutex> lock(mu_);
  const std::string length = fixed_bytes(version.size(), 8);
  out_ << length << fixed_bytes(masked_crc32c(length), 4) << version << fixed_bytes(masked_crc32c(version), 4);
  out_.flush();
}

void TensorBoardWriter::event(int64_t step, const std::string& summary) {
  std::string e;
  fixed(e, 1, now_s());
  integer(e, 2, step);
  bytes(e, 5, summary);
  const std::string length = fixed_bytes(e.size(), 8);
  std::lock_guard<std::mutex> lock(mu_);
  out_ << length << fixed_bytes(masked_crc32c(length), 4) << e << fixed_bytes(masked_crc32c(e), 4);
}

void TensorBoardWriter::scalar(const std::string& tag, int64_t step, double value) {
  std::string v;
  bytes(v, 1, tag);
  fixed(v, 2, static_cast<float>(value));
  std::string summary;
  bytes(summary, 1, v);
  event(step, summary);
}

void TensorBoardWriter::image(const std::string& tag, int64_t step, const std::string& png, int height, int width,
                              int channels) {
  std::string img;
  integer(img, 1, height);
  integer(img, 2, width);
  integer(img, 3, channels);
  bytes(img, 4, png);
  std::string v;
  bytes(v, 1, tag);
  bytes(v, 4, img);
  std::string summary;
  bytes(summary, 1, v);
  event(step, summary);
}

void TensorBoardWriter::png_file(const std::string& tag, int64_t step, const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  const std::string png((std::istreambuf_iterator<char>(in)), {});
  int width = 0, height = 0, channels = 0;
  if (png.compare(0, 8, "\x89PNG\r\n\x1a\n") != 0 ||
      !stbi_info_from_memory(reinterpret_cast<const stbi_uc*>(png.data()), static_cast<int>(png.size()), &width,
                             &height, &channels))
    throw std::runtime_error("TensorBoard image '" + tag + "': " + path + " is not a readable PNG");
  image(tag, step, png, height, width, channels);
}

void TensorBoardWriter::gpus(int64_t step, const std::vector<GpuSample>& samples) {
  constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
  for (const auto& g : samples) {
    const std::string prefix = "gpu" + std::to_string(g.index) + "/";
    if (g.util_percent) scalar(prefix + "util_percent", step, *g.util_percent);
    if (g.mem_used_bytes) scalar(prefix + "mem_used_gib", step, static_cast<double>(*g.mem_used_bytes) / kGiB);
    if (g.temperature_c) scalar(prefix + "temperature_c", step, *g.temperature_c);
  }
  flush();
}

void TensorBoardWriter::row(const MetricsWriter::Row& row) {
  int64_t step = 0;
  for (const auto& [name, field] : row)
    if (name == "step" && std::holds_alternative<int64_t>(field)) step = std::get<int64_t>(field);
  for (const auto& [name, field] : row) {
    if (name == "step") continue;
    if (const auto* i = std::get_if<int64_t>(&field)) scalar(name, step, static_cast<double>(*i));
    if (const auto* d = std::get_if<double>(&field)) scalar(name, step, *d);
  }
  flush();
}

void TensorBoardWriter::flush() {
  std::lock_guard<std::mutex> lock(mu_);
  errno = 0;
  if (!out_.flush()) throw std::runtime_error(path_ + ": cannot write: " + stream_error());
}

}  // namespace tandem
