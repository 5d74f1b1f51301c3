#include "h5_types.h"

#include <stdexcept>

#include "tandem/error.h"

// The float16 memory type below is the little-endian file type.
static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "tandem's HDF5 I/O assumes a little-endian host");

namespace tandem::h5 {
namespace {

// IEEE binary16 built the way h5py builds it, so h5py and numpy read float16.
hid_t half_type() {
  static const hid_t type = [] {
    hid_t t = H5Tcopy(H5T_IEEE_F32LE);
    if (t < 0 || H5Tset_fields(t, 15, 10, 5, 0, 10) < 0 || H5Tset_size(t, 2) < 0 || H5Tset_ebias(t, 15) < 0 ||
        H5Tlock(t) < 0) {
      throw std::runtime_error("HDF5: cannot build the float16 type");
    }
    return t;
  }();
  return type;
}

c10::ScalarType float_dtype(hid_t type, const std::string& where) {
  const size_t size = H5Tget_size(type);
  if (size == 4) return c10::kFloat;
  if (size == 8) return c10::kDouble;
  if (size == 2) {
    size_t spos, epos, esize, mpos, msize;
    if (H5Tget_fields(type, &spos, &epos, &esize, &mpos, &msize) >= 0 && esize == 5 && msize == 10) return c10::kHalf;
  }
  throw UsageError(where + ": unsupported floating-point type of " + std::to_string(size) + " bytes");
}

c10::ScalarType integer_dtype(hid_t type, const std::string& dtype_attr, const std::string& where) {
  const size_t size = H5Tget_size(type);
  const bool is_signed = H5Tget_sign(type) == H5T_SGN_2;
  if (is_signed) {
    switch (size) {
      case 1:
        return c10::kChar;
      case 2:
        return c10::kShort;
      case 4:
        return c10::kInt;
      case 8:
        return c10::kLong;
    }
  } else {
    // torch has no uint16/uint32: widen them to the next signed type (token ids
    // prepared in numpy are often uint16), except bfloat16 bits stored as uint16.
    switch (size) {
      case 1:
        return dtype_attr == "bool" ? c10::kBool : c10::kByte;
      case 2:
        return dtype_attr == "bfloat16" ? c10::kBFloat16 : c10::kInt;
      case 4:
        return c10::kLong;
    }
  }
  throw UsageError(where + ": unsupported " + std::string(is_signed ? "signed" : "unsigned") + " integer type of " +
                   std::to_string(size) + " bytes");
}

}  // namespace

Layout layout_of(c10::ScalarType dtype, const std::string& where) {
  switch (dtype) {
    case c10::kFloat:
      return {H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, "float32"};
    case c10::kDouble:
      return {H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, "float64"};
    case c10::kHalf:
      return {half_type(), half_type(), "float16"};
    case c10::kBFloat16:
      return {H5T_STD_U16LE, H5T_NATIVE_UINT16, "bfloat16"};
    case c10::kLong:
      return {H5T_STD_I64LE, H5T_NATIVE_INT64, "int64"};
    case c10::kInt:
      return {H5T_STD_I32LE, H5T_NATIVE_INT32, "int32"};
    case c10::kShort:
      return {H5T_STD_I16LE, H5T_NATIVE_INT16, "int16"};
    case c10::kChar:
      return {H5T_STD_I8LE, H5T_NATIVE_INT8, "int8"};
    case c10::kByte:
      return {H5T_STD_U8LE, H5T_NATIVE_UINT8, "uint8"};
    case c10::kBool:
      return {H5T_STD_U8LE, H5T_NATIVE_UINT8, "bool"};
    default:
      throw std::invalid_argument(where + ": dtype " + c10::toString(dtype) + " cannot be stored in HDF5");
  }
}

c10::ScalarType dtype_of(hid_t file_type, const std::string& dtype_attr, const std::string& where) {
  switch (H5Tget_class(file_type)) {
    case H5T_FLOAT:
      return float_dtype(file_type, where);
    case H5T_INTEGER:
      return integer_dtype(file_type, dtype_attr, where);
    default:
      throw UsageError(where + ": not a numeric dataset (only integer and floating-point data read as tensors)");
  }
}

}  // namespace tandem::h5
