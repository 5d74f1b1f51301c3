#pragma once
// safetensors, the tensor format of the Hugging Face world: an 8-byte
// little-endian header length, a JSON header giving each tensor's dtype, shape
// and byte range (and an optional "__metadata__" map of strings), then the raw
// little-endian bytes. Dtypes: F64 F32 F16 BF16 I64 I32 U8 BOOL.
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "tandem/io/checkpoint.h"

namespace tandem {

using SafetensorsMetadata = std::map<std::string, std::string>;

// The file's tensors in the order of their data, on the CPU. Throws a
// UsageError naming the file and the fault: truncated, bad JSON, an unknown
// dtype, byte ranges that overlap, leave holes or disagree with the shape.
NamedTensors read_safetensors(const std::string& path);

// What the header says of one tensor.
struct SafetensorsEntry {
  std::string name;
  at::ScalarType dtype;
  std::vector<int64_t> shape;
};

// The header's tensors in the order of their data, checked as
// read_safetensors checks them, without reading any data: what a loader
// compares with its model before it reads a byte of a large file.
std::vector<SafetensorsEntry> read_safetensors_index(const std::string& path);

// read_safetensors one tensor at a time: each, in the order of the data, is
// read, handed to `take` and dropped before the next, so that loading a
// model holds one tensor of the file at a time beside the model (gpt2-xl's
// 6.2 GB file is not held whole on every rank's host). The same checks,
// all made before `take` first runs.
void for_each_safetensor(const std::string& path,
                         const std::function<void(const std::string& name, const at::Tensor& tensor)>& take);

// Only the "__metadata__" map (empty when there is none); reads the header only.
SafetensorsMetadata read_safetensors_metadata(const std::string& path);

// Writes as the reference implementation does, so files compare byte for byte:
// tensors sorted by element size (largest first, which keeps every tensor
// aligned), then by name; the header padded with spaces to a multiple of 8;
// "__metadata__" only when `metadata` is non-empty. Tensors may live on any
// device and have any strides. Written through replace_atomically
// (io/atomic_file.h). Throws std::invalid_argument for duplicate or empty
// names and for dtypes the format lacks.
void write_safetensors(const std::string& path, const NamedTensors& tensors, const SafetensorsMetadata& metadata = {});

}  // namespace tandem
