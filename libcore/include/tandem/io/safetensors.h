#pragma once
// safetensors, the tensor format of the Hugging Face world: an 8-byte
// little-endian header length, a JSON header giving each tensor's dtype, shape
// and byte range (and an optional "__metadata__" map of strings), then the raw
// little-endian bytes. Dtypes: F64 F32 F16 BF16 I64 I32 U8 BOOL.
#include <map>
#include <string>

#include "tandem/io/checkpoint.h"

namespace tandem {

using SafetensorsMetadata = std::map<std::string, std::string>;

// The file's tensors in the order of their data, on the CPU. Throws a
// UsageError naming the file and the fault: truncated, bad JSON, an unknown
// dtype, byte ranges that overlap, leave holes or disagree with the shape.
NamedTensors read_safetensors(const std::string& path);

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
