#pragma once
// Tensors and attributes in one HDF5 file. Errors name the file and the dataset
// or attribute: a missing, malformed or unreadable object (a damaged or
// truncated file) is a UsageError, since the user gave us the file; failing
// to create or write one is a std::runtime_error. Before a file is opened for
// the first time, tandem-h5walk reads it in a separate process: a file that
// crashes or hangs the HDF5 library is a UsageError too (io/h5_guard.h).
#include <ATen/core/Tensor.h>

#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include "tandem/io/attr_value.h"

namespace tandem {

class H5File {
 public:
  enum class Mode { kRead, kReadWrite, kCreate /* truncates */ };

  explicit H5File(std::string path, Mode mode = Mode::kRead);
  ~H5File();
  H5File(H5File&& other) noexcept;
  H5File& operator=(H5File&& other) noexcept;
  H5File(const H5File&) = delete;
  H5File& operator=(const H5File&) = delete;

  const std::string& path() const { return path_; }

  // Names are paths from the root ("model/wte.weight"); writing creates the
  // groups on the way and replaces an existing dataset of that name.
  // Stored dtypes: float32/64, float16 (IEEE half, as numpy), bfloat16 (as
  // uint16 bits), int8/16/32/64, uint8, bool (as uint8); every dataset carries a
  // string attribute `dtype` naming the torch dtype.
  void write(const std::string& name, const at::Tensor& tensor);
  // Appends rows along dim 0, creating a chunked, extendable dataset on first use.
  void append(const std::string& name, const at::Tensor& rows);

  at::Tensor read(const std::string& name) const;
  // Rows [begin, end) along dim 0, read without touching the rest of the dataset.
  at::Tensor read_rows(const std::string& name, int64_t begin, int64_t end) const;
  std::vector<int64_t> shape(const std::string& name) const;

  bool has(const std::string& name) const;
  // Creates a group and the groups above it, if missing (for sets that may be empty).
  void create_group(const std::string& name);
  // Child names of a group ("" is the root), in creation order where the file
  // tracks it (files written here do), otherwise by name.
  std::vector<std::string> list(const std::string& group = "") const;

  // Attributes on any group or dataset; object "" is the root.
  void set_attr(const std::string& object, const std::string& key, const AttrValue& value);
  template <class Int, std::enable_if_t<std::is_integral_v<Int> && !std::is_same_v<Int, bool>, int> = 0>
  void set_attr(const std::string& object, const std::string& key, Int value) {
    set_attr(object, key, AttrValue(static_cast<int64_t>(value)));
  }
  bool has_attr(const std::string& object, const std::string& key) const;
  AttrValue attr(const std::string& object, const std::string& key) const;
  std::string attr_string(const std::string& object, const std::string& key) const;
  int64_t attr_int(const std::string& object, const std::string& key) const;
  double attr_double(const std::string& object, const std::string& key) const;  // int64 accepted
  std::vector<std::string> attr_names(const std::string& object) const;

  void flush();
  // Closes now, reporting failure; the destructor closes silently.
  void close();

 private:
  int64_t id() const;  // the hid_t of the open file

  std::string path_;
  int64_t file_ = -1;
  bool writes_ = false;  // a file this process wrote needs no walk when read again
};

// The HDF5 library this program runs with, "1.10.8".
std::string hdf5_version();

}  // namespace tandem
