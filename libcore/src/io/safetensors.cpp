#include "tandem/io/safetensors.h"

#include <fcntl.h>
#include <torch/torch.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <stdexcept>
#include <tuple>

#include "tandem/error.h"
#include "tandem/io/atomic_file.h"
#include "tandem/text/message_text.h"

// The format is little-endian and tensors are copied byte for byte.
static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "safetensors I/O assumes a little-endian host");

namespace tandem {
namespace {


// The reference implementation refuses larger headers; so do we, rather than
// allocate whatever a corrupt length asks for.
constexpr uint64_t kMaxHeaderBytes = 100'000'000;

struct Dtype {
  const char* name;
  at::ScalarType type;
  // Position in the reference implementation's dtype enum, which orders by
  // alignment; its writer sorts tensors by this, descending.
  int rank;
};

constexpr Dtype kDtypes[] = {
    {"BOOL", at::kBool, 0}, {"U8", at::kByte, 1},    {"F16", at::kHalf, 7},    {"BF16", at::kBFloat16, 8},
    {"I32", at::kInt, 9},   {"F32", at::kFloat, 11}, {"F64", at::kDouble, 12}, {"I64", at::kLong, 13},
};

const Dtype* dtype_named(const std::string& name) {
  for (const Dtype& dtype : kDtypes)
    if (name == dtype.name) return &dtype;
  return nullptr;
}

const Dtype* dtype_of(at::ScalarType type) {
  for (const Dtype& dtype : kDtypes)
    if (type == dtype.type) return &dtype;
  return nullptr;
}

std::string known_dtypes() {
  std::string out;
  for (const Dtype& dtype : kDtypes) out += (out.empty() ? "" : " ") + std::string(dtype.name);
  return out;
}

struct Entry {
  std::string name;
  const Dtype* dtype;
  std::vector<int64_t> shape;
  uint64_t begin, end;  // within the data section
};

struct Header {
  uint64_t data_start;         // file offset of the data section
  std::vector<Entry> entries;  // by data offset
  SafetensorsMetadata metadata;
};

class Reader {
 public:
  explicit Reader(const std::string& path) : path_(path), in_(path, std::ios::binary) {
    if (!in_) throw UsageError(path + ": cannot open safetensors file: " + std::strerror(errno));
    in_.seekg(0, std::ios::end);
    size_ = static_cast<uint64_t>(in_.tellg());
    in_.seekg(0);
  }

  [[noreturn]] void fail(const std::string& what) const { throw UsageError(path_ + ": " + what); }

  uint64_t size() const { return size_; }

  void read(uint64_t offset, void* out, uint64_t bytes) {
    in_.seekg(static_cast<std::streamoff>(offset));
    in_.read(static_cast<char*>(out), static_cast<std::streamsize>(bytes));
    if (!in_) fail("read failed at byte " + std::to_string(offset));
  }

 private:
  std::string path_;
  std::ifstream in_;
  uint64_t size_ = 0;
};

uint64_t json_offset(const Reader& reader, const std::string& name, const nlohmann::json& value) {
  if (!value.is_number_unsigned()) reader.fail("tensor '" + name + "': data_offsets must be two non-negative integers");
  return value.get<uint64_t>();
}

Entry parse_entry(const Reader& reader, const std::string& name, const nlohmann::json& info) {
  const std::string where = "tensor '" + name + "': ";
  if (!info.is_object()) reader.fail(where + "expected an object with dtype, shape and data_offsets");
  for (const char* key : {"dtype", "shape", "data_offsets"})
    if (!info.contains(key)) reader.fail(where + "no \"" + key + "\"");

  Entry entry{name, nullptr, {}, 0, 0};
  const nlohmann::json& dtype = info["dtype"];
  if (dtype.is_string()) entry.dtype = dtype_named(dtype.get<std::string>());
  if (entry.dtype == nullptr) reader.fail(where + "unknown dtype " + dtype.dump() + " (known: " + known_dtypes() + ")");

  const nlohmann::json& shape = info["shape"];
  if (!shape.is_array()) reader.fail(where + "shape must be an array of non-negative integers");
  // Counted in bytes as we go, so that a huge shape cannot overflow unnoticed.
  uint64_t bytes = c10::elementSize(entry.dtype->type);
  bool beyond_file = false;
  for (const auto& size : shape) {
    if (!size.is_number_unsigned()) reader.fail(where + "shape must be an array of non-negative integers");
    const uint64_t n = size.get<uint64_t>();
    entry.shape.push_back(static_cast<int64_t>(n));
    if (n == 0) {
      bytes = 0;
      beyond_file = false;
    } else if (!beyond_file && bytes > reader.size() / n) {
      beyond_file = true;
    } else if (!beyond_file) {
      bytes *= n;
    }
  }

  const nlohmann::json& offsets = info["data_offsets"];
  if (!offsets.is_array() || offsets.size() != 2) reader.fail(where + "data_offsets must be two non-negative integers");
  entry.begin = json_offset(reader, name, offsets[0]);
  entry.end = json_offset(reader, name, offsets[1]);
  if (entry.end < entry.begin) {
    reader.fail(where + "data_offsets [" + std::to_string(entry.begin) + "," + std::to_string(entry.end) +
                "] end before they begin");
  }
  if (beyond_file || entry.end - entry.begin != bytes) {
    reader.fail(where + "data_offsets [" + std::to_string(entry.begin) + "," + std::to_string(entry.end) + "] hold " +
                std::to_string(entry.end - entry.begin) + " bytes, but " + dtype.get<std::string>() + " " +
                shape_text(entry.shape) + " needs " +
                (beyond_file ? std::string("more bytes than the file has") : std::to_string(bytes)));
  }
  return entry;
}

Header read_header(Reader& reader) {
  if (reader.size() < 8) {
    reader.fail("truncated: " + std::to_string(reader.size()) + " bytes, not even the 8-byte header length");
  }
  unsigned char length_bytes[8];
  reader.read(0, length_bytes, 8);
  uint64_t length = 0;
  for (int i = 7; i >= 0; --i) length = (length << 8) | length_bytes[i];
  if (length > kMaxHeaderBytes) {
    reader.fail("header length " + std::to_string(length) + " is over the 100 MB limit: not a safetensors file?");
  }
  if (8 + length > reader.size()) {
    reader.fail("truncated: the header needs " + std::to_string(length) + " bytes after the length, the file has " +
                std::to_string(reader.size() - 8));
  }

  std::string text(length, '\0');
  reader.read(8, text.data(), length);
  nlohmann::json json;
  try {
    json = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& error) {  // also out_of_range: a number past double
    reader.fail(std::string("bad JSON header: ") + error.what());
  }
  if (!json.is_object()) reader.fail("bad JSON header: expected an object, got " + std::string(json.type_name()));

  Header header{8 + length, {}, {}};
  for (const auto& [name, value] : json.items()) {
    if (name != "__metadata__") {
      header.entries.push_back(parse_entry(reader, name, value));
      continue;
    }
    if (!value.is_object()) reader.fail("__metadata__ must map strings to strings");
    for (const auto& [key, text_value] : value.items()) {
      if (!text_value.is_string())
        reader.fail("__metadata__ must map strings to strings; \"" + key + "\" is " + text_value.dump());
      header.metadata[key] = text_value.get<std::string>();
    }
  }

  // Like the reference reader: by offset, the tensors must tile the data
  // section exactly, from its first byte to the end of the file.
  std::stable_sort(header.entries.begin(), header.entries.end(),
                   [](const Entry& a, const Entry& b) { return std::tie(a.begin, a.end) < std::tie(b.begin, b.end); });
  const uint64_t data_size = reader.size() - header.data_start;
  uint64_t covered = 0;
  for (size_t i = 0; i < header.entries.size(); ++i) {
    const Entry& entry = header.entries[i];
    const std::string range = "[" + std::to_string(entry.begin) + "," + std::to_string(entry.end) + "]";
    const std::string where = "tensor '" + entry.name + "' data_offsets " + range;
    if (entry.begin < covered) reader.fail(where + " overlap tensor '" + header.entries[i - 1].name + "'");
    if (entry.begin > covered) {
      reader.fail(where + " leave bytes [" + std::to_string(covered) + "," + std::to_string(entry.begin) + "] unused");
    }
    if (entry.end > data_size) {
      reader.fail("truncated: " + where + " run past the data, which has " + std::to_string(data_size) + " bytes");
    }
    covered = entry.end;
  }
  if (covered != data_size) reader.fail(std::to_string(data_size - covered) + " bytes after the last tensor's data");
  return header;
}

// Writes all of `bytes` or throws.
void write_all(int fd, const void* bytes, size_t size, const std::string& path) {
  const char* p = static_cast<const char*>(bytes);
  while (size > 0) {
    const ssize_t written = ::write(fd, p, size);
    if (written < 0 && errno == EINTR) continue;
    if (written < 0) throw std::runtime_error(path + ": write failed: " + std::strerror(errno));
    p += written;
    size -= static_cast<size_t>(written);
  }
}

// Owns the descriptor, so that a write that throws still closes it.
class File {
 public:
  explicit File(const std::string& path)
      : path_(path), fd_(::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644)) {
    if (fd_ < 0) throw std::runtime_error(path + ": cannot open: " + std::strerror(errno));
  }
  ~File() {
    if (fd_ >= 0) ::close(fd_);
  }
  File(const File&) = delete;
  File& operator=(const File&) = delete;

  int fd() const { return fd_; }
  void close() {
    const bool closed = ::close(fd_) == 0;
    fd_ = -1;
    if (!closed) throw std::runtime_error(path_ + ": close failed: " + std::strerror(errno));
  }

 private:
  std::string path_;
  int fd_;
};

struct Prepared {
  std::string name;
  const Dtype* dtype;
  at::Tensor tensor;  // CPU, contiguous
};

std::vector<Prepared> prepare(const std::string& path, const NamedTensors& tensors) {
  std::vector<Prepared> out;
  std::set<std::string> names;
  for (const auto& [name, tensor] : tensors) {
    if (name.empty() || name == "__metadata__")
      throw std::invalid_argument(path + ": invalid tensor name '" + name + "'");
    if (!names.insert(name).second) throw std::invalid_argument(path + ": tensor '" + name + "' given twice");
    const Dtype* dtype = dtype_of(tensor.scalar_type());
    if (dtype == nullptr) {
      throw std::invalid_argument(path + ": tensor '" + name + "' has dtype " +
                                  std::string(c10::toString(tensor.scalar_type())) +
                                  ", which safetensors I/O does not support (" + known_dtypes() + ")");
    }
    out.push_back({name, dtype, tensor.detach().to(at::kCPU).contiguous()});
  }
  std::sort(out.begin(), out.end(), [](const Prepared& a, const Prepared& b) {
    return a.dtype->rank != b.dtype->rank ? a.dtype->rank > b.dtype->rank : a.name < b.name;
  });
  return out;
}

// Compact JSON with keys in this order: what the reference writer emits.
std::string header_text(const std::vector<Prepared>& tensors, const SafetensorsMetadata& metadata) {
  nlohmann::ordered_json json = nlohmann::ordered_json::object();
  if (!metadata.empty()) json["__metadata__"] = metadata;
  uint64_t offset = 0;
  for (const Prepared& p : tensors) {
    const uint64_t bytes = p.tensor.numel() * p.tensor.element_size();
    nlohmann::ordered_json info;
    info["dtype"] = p.dtype->name;
    info["shape"] = p.tensor.sizes().vec();
    info["data_offsets"] = {offset, offset + bytes};
    json[p.name] = std::move(info);
    offset += bytes;
  }
  std::string text = json.dump();
  text.resize((text.size() + 7) / 8 * 8, ' ');
  return text;
}

}  // namespace

NamedTensors read_safetensors(const std::string& path) {
  NamedTensors out;
  for_each_safetensor(path, [&](const std::string& name, const at::Tensor& tensor) { out.emplace_back(name, tensor); });
  return out;
}

std::vector<SafetensorsEntry> read_safetensors_index(const std::string& path) {
  Reader reader(path);
  std::vector<SafetensorsEntry> out;
  for (const Entry& entry : read_header(reader).entries) out.push_back({entry.name, entry.dtype->type, entry.shape});
  return out;
}

void for_each_safetensor(const std::string& path,
                         const std::function<void(const std::string& name, const at::Tensor& tensor)>& take) {
  Reader reader(path);
  const Header header = read_header(reader);
  for (const Entry& entry : header.entries) {
    at::Tensor tensor = at::empty(entry.shape, at::TensorOptions().dtype(entry.dtype->type));
    reader.read(header.data_start + entry.begin, tensor.data_ptr(), entry.end - entry.begin);
    take(entry.name, tensor);
  }
}

SafetensorsMetadata read_safetensors_metadata(const std::string& path) {
  Reader reader(path);
  return read_header(reader).metadata;
}

void write_safetensors(const std::string& path, const NamedTensors& tensors, const SafetensorsMetadata& metadata) {
  const std::vector<Prepared> prepared = prepare(path, tensors);
  const std::string header = header_text(prepared, metadata);

  replace_atomically(path, [&](const std::string& temp) {
    File file(temp);
    unsigned char length[8];
    for (int i = 0; i < 8; ++i) length[i] = static_cast<unsigned char>(static_cast<uint64_t>(header.size()) >> (8 * i));
    write_all(file.fd(), length, sizeof length, temp);
    write_all(file.fd(), header.data(), header.size(), temp);
    for (const Prepared& p : prepared)
      write_all(file.fd(), p.tensor.data_ptr(), p.tensor.numel() * p.tensor.element_size(), temp);
    file.close();
  });
}

}  // namespace tandem
