#pragma once
// Private to io/: how each torch dtype is laid out in HDF5, both ways.
#include <c10/core/ScalarType.h>
#include <hdf5.h>

#include <string>

namespace tandem::h5 {

struct Layout {
  hid_t file_type;    // type of the dataset on disk
  hid_t memory_type;  // type of the tensor's bytes in memory
  const char* name;   // value of the dataset's `dtype` attribute
};

// Throws std::invalid_argument, prefixed by `where`, for dtypes without a
// layout (complex, quantized).
Layout layout_of(c10::ScalarType dtype, const std::string& where);

// The tensor dtype a dataset reads into. `dtype_attr` is the dataset's `dtype`
// attribute or "" (files from other writers); it tells bfloat16 and bool apart
// from the uint16 and uint8 they are stored as. `where` prefixes errors.
c10::ScalarType dtype_of(hid_t file_type, const std::string& dtype_attr, const std::string& where);

}  // namespace tandem::h5
