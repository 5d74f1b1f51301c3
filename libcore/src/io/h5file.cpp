#include "tandem/io/h5file.h"

#include <hdf5.h>
#include <torch/torch.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <numeric>
#include <stdexcept>
#include <type_traits>
#include <utility>

#include "h5_guard.h"
#include "h5_handle.h"
#include "h5_types.h"
#include "tandem/error.h"
#include "tandem/text/message_text.h"

static_assert(std::is_same_v<hid_t, int64_t>, "H5File keeps its hid_t in an int64_t");

namespace tandem {
namespace {

using h5::Handle;

constexpr const char* kDtypeAttr = "dtype";
// Chunks of about 1 MiB keep appends cheap and partial reads of a few rows small.
constexpr size_t kChunkBytes = size_t{1} << 20;
// Whole tensors are written as chunks of about this many rows' bytes, each
// with its own checksum: a read of a few rows (a sharded resume's runs of
// the optimizer's moments, AdamW::load_moment) decodes only the chunks it
// spans, since HDF5 reads and checks a filtered chunk whole.
constexpr size_t kWriteChunkBytes = size_t{16} << 20;
// HDF5 refuses chunks of 4 GiB or more; a row up to this size is a chunk of
// its own.
constexpr size_t kMaxWriteChunkBytes = size_t{1} << 30;

// A damaged file is the user's file at fault, as a missing dataset is.
[[noreturn]] void throw_unreadable(const std::string& where, const std::string& what) {
  throw UsageError(where + ": " + h5::unreadable(what));
}

// Names are paths from the root; "", "/" and "a/b/" mean the root and "a/b".
std::string normalize(const std::string& name) {
  const size_t first = name.find_first_not_of('/');
  if (first == std::string::npos) return "";
  return name.substr(first, name.find_last_not_of('/') - first + 1);
}

std::string h5_name(const std::string& normalized) { return normalized.empty() ? "/" : normalized; }

std::string quoted(const std::string& name) { return "'" + name + "'"; }

// How messages refer to an object given by the caller.
std::string object_label(const std::string& name) { return normalize(name).empty() ? "the root group" : quoted(name); }

// H5Lexists fails rather than answering for "a/b" when "a" is missing, so
// every prefix is checked in turn.
bool link_exists(hid_t file, const std::string& normalized) {
  if (normalized.empty()) return true;
  size_t end = 0;
  while (end != std::string::npos) {
    end = normalized.find('/', end + 1);
    if (H5Lexists(file, normalized.substr(0, end).c_str(), H5P_DEFAULT) <= 0) return false;
  }
  return true;
}

Handle group_creation_plist() {
  Handle plist(H5Pcreate(H5P_GROUP_CREATE), H5Pclose);
  // Tracking creation order lets list() give names back in the order written,
  // which is the order of a model's parameters.
  if (!plist.valid() || H5Pset_link_creation_order(plist.get(), H5P_CRT_ORDER_TRACKED | H5P_CRT_ORDER_INDEXED) < 0) {
    throw std::runtime_error("HDF5: cannot make a group creation property list" + h5::reason());
  }
  return plist;
}

std::vector<int64_t> dims_of(hid_t space) {
  const int rank = H5Sget_simple_extent_ndims(space);
  std::vector<hsize_t> dims(std::max(rank, 0));
  H5Sget_simple_extent_dims(space, dims.data(), nullptr);
  return {dims.begin(), dims.end()};
}

Handle make_space(const std::vector<hsize_t>& dims, const std::vector<hsize_t>& max_dims = {}) {
  if (dims.empty()) return Handle(H5Screate(H5S_SCALAR), H5Sclose);
  return Handle(
      H5Screate_simple(static_cast<int>(dims.size()), dims.data(), max_dims.empty() ? nullptr : max_dims.data()),
      H5Sclose);
}

std::vector<hsize_t> to_hsize(at::IntArrayRef sizes) { return {sizes.begin(), sizes.end()}; }

Handle variable_string_type(H5T_cset_t cset) {
  Handle type(H5Tcopy(H5T_C_S1), H5Tclose);
  H5Tset_size(type.get(), H5T_VARIABLE);
  H5Tset_cset(type.get(), cset);
  return type;
}

void write_attr(hid_t object, const std::string& key, const AttrValue& value, const std::string& where) {
  if (H5Aexists(object, key.c_str()) > 0 && H5Adelete(object, key.c_str()) < 0) {
    throw std::runtime_error(where + ": cannot replace attribute " + quoted(key) + h5::reason());
  }
  // Strings are fixed-length UTF-8, stored inside the attribute's checksummed
  // object header. Variable-length ones (which h5py would return as str, not
  // bytes) live in HDF5's global heap, which has no checksum: damage there
  // made HDF5 itself loop forever (found by fuzz_h5).
  Handle str_type(H5Tcopy(H5T_C_S1), H5Tclose);
  const std::string* text = std::get_if<std::string>(&value);
  H5Tset_size(str_type.get(), text != nullptr ? std::max<size_t>(text->size(), 1) : 1);
  H5Tset_strpad(str_type.get(), H5T_STR_NULLPAD);
  H5Tset_cset(str_type.get(), H5T_CSET_UTF8);
  hid_t file_type = str_type.get(), memory_type = str_type.get();
  const void* data = text != nullptr ? text->c_str() : nullptr;
  if (const auto* i = std::get_if<int64_t>(&value)) {
    file_type = H5T_STD_I64LE, memory_type = H5T_NATIVE_INT64, data = i;
  } else if (const auto* d = std::get_if<double>(&value)) {
    file_type = H5T_IEEE_F64LE, memory_type = H5T_NATIVE_DOUBLE, data = d;
  }
  Handle space(H5Screate(H5S_SCALAR), H5Sclose);
  Handle attr(H5Acreate2(object, key.c_str(), file_type, space.get(), H5P_DEFAULT, H5P_DEFAULT), H5Aclose);
  if (!attr.valid() || H5Awrite(attr.get(), memory_type, data) < 0) {
    throw std::runtime_error(where + ": cannot write attribute " + quoted(key) + h5::reason());
  }
}

std::string read_string_attr(hid_t attr, hid_t file_type, const std::string& where) {
  const H5T_cset_t cset = H5Tget_cset(file_type);
  if (H5Tis_variable_str(file_type) > 0) {
    Handle memory_type = variable_string_type(cset);
    char* text = nullptr;
    if (H5Aread(attr, memory_type.get(), &text) < 0) throw_unreadable(where, "cannot read");
    std::string out = text != nullptr ? text : "";
    H5free_memory(text);
    return out;
  }
  // Fixed-length strings, as some writers make them, padded with NULs or spaces.
  Handle memory_type(H5Tcopy(file_type), H5Tclose);
  std::string out(H5Tget_size(file_type), '\0');
  if (H5Aread(attr, memory_type.get(), out.data()) < 0) throw_unreadable(where, "cannot read");
  out.resize(std::min(out.find('\0'), out.size()));
  if (H5Tget_strpad(file_type) == H5T_STR_SPACEPAD) out.erase(out.find_last_not_of(' ') + 1);
  return out;
}

AttrValue read_attr(hid_t object, const std::string& key, const std::string& where) {
  Handle attr(H5Aopen(object, key.c_str(), H5P_DEFAULT), H5Aclose);
  if (!attr.valid()) throw_unreadable(where, "cannot open");
  Handle type(H5Aget_type(attr.get()), H5Tclose);
  Handle space(H5Aget_space(attr.get()), H5Sclose);
  if (H5Sget_simple_extent_npoints(space.get()) != 1) throw UsageError(where + " holds an array, not a single value");
  switch (H5Tget_class(type.get())) {
    case H5T_INTEGER: {
      int64_t value = 0;
      if (H5Aread(attr.get(), H5T_NATIVE_INT64, &value) < 0) throw_unreadable(where, "cannot read");
      return value;
    }
    case H5T_FLOAT: {
      double value = 0;
      if (H5Aread(attr.get(), H5T_NATIVE_DOUBLE, &value) < 0) throw_unreadable(where, "cannot read");
      return value;
    }
    case H5T_STRING:
      return read_string_attr(attr.get(), type.get(), where);
    default:
      throw UsageError(where + " is not an integer, float or string");
  }
}

const char* kind_name(const AttrValue& value) {
  static constexpr const char* kNames[] = {"an int64", "a double", "a string"};
  return kNames[value.index()];
}

// The `dtype` attribute of a dataset, or "" when it has none (other writers).
std::string dtype_attr(hid_t dataset, const std::string& where) {
  if (H5Aexists(dataset, kDtypeAttr) <= 0) return "";
  const AttrValue value = read_attr(dataset, kDtypeAttr, where + ": attribute 'dtype'");
  return std::holds_alternative<std::string>(value) ? std::get<std::string>(value) : "";
}

c10::ScalarType stored_dtype(hid_t dataset, const std::string& where) {
  Handle type(H5Dget_type(dataset), H5Tclose);
  return h5::dtype_of(type.get(), dtype_attr(dataset, where), where);
}

// Opens a group or dataset the caller named; a missing one is the user's file's fault.
Handle open_object(hid_t file, const std::string& path, const std::string& name, const char* kind) {
  const std::string normalized = normalize(name);
  if (!link_exists(file, normalized)) throw UsageError(path + ": no " + kind + " " + quoted(name));
  Handle object(H5Oopen(file, h5_name(normalized).c_str(), H5P_DEFAULT), H5Oclose);
  if (!object.valid()) throw_unreadable(path, "cannot open " + quoted(name));
  return object;
}

Handle open_dataset(hid_t file, const std::string& path, const std::string& name) {
  Handle object = open_object(file, path, name, "dataset");
  if (H5Iget_type(object.get()) != H5I_DATASET)
    throw UsageError(path + ": " + quoted(name) + " is a group, not a dataset");
  return object;
}

// Creates the groups above a dataset name, as `mkdir -p` would.
void make_parent_groups(hid_t file, const std::string& path, const std::string& normalized) {
  Handle plist = group_creation_plist();
  for (size_t slash = normalized.find('/'); slash != std::string::npos; slash = normalized.find('/', slash + 1)) {
    const std::string group = normalized.substr(0, slash);
    if (H5Lexists(file, group.c_str(), H5P_DEFAULT) > 0) {
      Handle object(H5Oopen(file, group.c_str(), H5P_DEFAULT), H5Oclose);
      if (H5Iget_type(object.get()) != H5I_GROUP) {
        throw std::invalid_argument(path + ": " + quoted(group) + " is a dataset, so " + quoted(normalize(normalized)) +
                                    " cannot be created");
      }
      continue;
    }
    Handle created(H5Gcreate2(file, group.c_str(), H5P_DEFAULT, plist.get(), H5P_DEFAULT), H5Gclose);
    if (!created.valid()) throw std::runtime_error(path + ": cannot create group " + quoted(group) + h5::reason());
  }
}

// How every dataset tandem writes is stored: in chunks of `chunk` (rows along
// dim 0), each with a Fletcher-32 checksum of its bytes that HDF5 checks on
// every read. A flipped bit in a tensor is then an error naming the dataset,
// not a silently different weight. h5py reads such datasets as any other.
Handle checksummed_layout(const std::vector<hsize_t>& chunk) {
  Handle plist(H5Pcreate(H5P_DATASET_CREATE), H5Pclose);
  if (!plist.valid() || H5Pset_chunk(plist.get(), static_cast<int>(chunk.size()), chunk.data()) < 0 ||
      H5Pset_fletcher32(plist.get()) < 0) {
    throw std::runtime_error("HDF5: cannot make a dataset creation property list" + h5::reason());
  }
  return plist;
}

// A damaged header can claim any shape. Data stored as it is (no compression
// filter) cannot be larger than the file holding it, so such a claim is
// refused before memory is allocated for it.
void check_claimed_size(hid_t dataset, const std::vector<int64_t>& dims, c10::ScalarType dtype,
                        const std::string& where) {
  uint64_t bytes = c10::elementSize(dtype);
  for (int64_t d : dims) {
    if (d < 0 || (d > 0 && bytes > UINT64_MAX / static_cast<uint64_t>(d)))
      throw_unreadable(where, "claims an impossible shape");
    bytes *= static_cast<uint64_t>(d);
  }
  if (h5::compressed(dataset)) return;
  Handle file(H5Iget_file_id(dataset), H5Fclose);
  hsize_t file_size = 0;
  if (!file.valid() || H5Fget_filesize(file.get(), &file_size) < 0 || bytes <= file_size) return;
  throw UsageError(where + " claims shape " + shape_text(dims) + " (" + std::to_string(bytes) +
                   " bytes), more than the whole file holds (" + std::to_string(file_size) +
                   " bytes): damaged or truncated?");
}

// Reads `count` rows from `begin` (the whole dataset when count < 0).
at::Tensor read_dataset(hid_t dataset, const std::string& where, int64_t begin, int64_t count) {
  const c10::ScalarType dtype = stored_dtype(dataset, where);
  // bool is read as its stored bytes and compared with zero, so that a file
  // holding values other than 0 and 1 still gives valid bools.
  const c10::ScalarType buffer_dtype = dtype == c10::kBool ? c10::kByte : dtype;
  Handle file_space(H5Dget_space(dataset), H5Sclose);
  std::vector<int64_t> dims = dims_of(file_space.get());
  check_claimed_size(dataset, dims, buffer_dtype, where);
  Handle memory_space;
  hid_t memory_selection = H5S_ALL, file_selection = H5S_ALL;
  if (count >= 0) {
    dims[0] = count;
    std::vector<hsize_t> start(dims.size(), 0), counts(dims.begin(), dims.end());
    start[0] = static_cast<hsize_t>(begin);
    if (count > 0 &&
        H5Sselect_hyperslab(file_space.get(), H5S_SELECT_SET, start.data(), nullptr, counts.data(), nullptr) < 0) {
      throw_unreadable(where, "cannot select rows");
    }
    memory_space = make_space(counts);
    memory_selection = memory_space.get();
    file_selection = file_space.get();
  }
  at::Tensor out = torch::empty(dims, torch::TensorOptions().dtype(buffer_dtype));
  if (out.numel() > 0 && H5Dread(dataset, h5::layout_of(buffer_dtype, where).memory_type, memory_selection,
                                 file_selection, H5P_DEFAULT, out.data_ptr()) < 0) {
    throw_unreadable(where, "cannot read");
  }
  return dtype == c10::kBool ? out.ne(0) : out;
}

template <class T>
T attr_as(const AttrValue& value, const std::string& where, const char* wanted) {
  if (const auto* v = std::get_if<T>(&value)) return *v;
  throw UsageError(where + " is " + kind_name(value) + ", not " + wanted);
}

}  // namespace

H5File::H5File(std::string path, Mode mode) : path_(std::move(path)), writes_(mode != Mode::kRead) {
  h5::silence_errors();
  if (mode == Mode::kCreate) {
    Handle plist(H5Pcreate(H5P_FILE_CREATE), H5Pclose);
    H5Pset_link_creation_order(plist.get(), H5P_CRT_ORDER_TRACKED | H5P_CRT_ORDER_INDEXED);
    // The 1.10 file format (h5py and every HDF5 since 2016 read it) keeps a
    // checksum on the superblock and on every object header, group index and
    // heap: damaged metadata is refused by HDF5 instead of being parsed. 1.10
    // rather than 1.8 for the chunk index: 1.8's is a B-tree without
    // checksums, where one flipped bit moved a tensor's chunk out of its
    // extent and the tensor read back as zeros, unnoticed; 1.10 keeps a
    // single chunk's place in the checksummed header and indexes more in
    // checksummed fixed arrays.
    Handle access(H5Pcreate(H5P_FILE_ACCESS), H5Pclose);
    H5Pset_libver_bounds(access.get(), H5F_LIBVER_V110, H5F_LIBVER_LATEST);
    file_ = H5Fcreate(path_.c_str(), H5F_ACC_TRUNC, plist.get(), access.get());
    if (file_ < 0) throw std::runtime_error(path_ + ": cannot create HDF5 file" + h5::reason());
    return;
  }
  std::error_code ec;
  if (!std::filesystem::exists(path_, ec)) throw UsageError(path_ + ": no such file");
  if (std::filesystem::is_directory(path_, ec)) throw UsageError(path_ + ": is a directory, not an HDF5 file");
  h5::walk_first(path_);
#if H5_VERSION_GE(1, 12, 0)
  const htri_t is_hdf5 = H5Fis_accessible(path_.c_str(), H5P_DEFAULT);
#else
  const htri_t is_hdf5 = H5Fis_hdf5(path_.c_str());
#endif
  if (is_hdf5 == 0) throw UsageError(path_ + ": not an HDF5 file");
  if (is_hdf5 < 0) throw_unreadable(path_, "cannot read");
  file_ = H5Fopen(path_.c_str(), mode == Mode::kRead ? H5F_ACC_RDONLY : H5F_ACC_RDWR, H5P_DEFAULT);
  if (file_ < 0) throw_unreadable(path_, "cannot open as HDF5");
}

H5File::~H5File() {
  if (file_ >= 0 && H5Fclose(file_) >= 0 && writes_) h5::remember_written(path_);
}

H5File::H5File(H5File&& other) noexcept
    : path_(std::move(other.path_)), file_(std::exchange(other.file_, -1)), writes_(other.writes_) {}

H5File& H5File::operator=(H5File&& other) noexcept {
  if (this != &other) {
    if (file_ >= 0 && H5Fclose(file_) >= 0 && writes_) h5::remember_written(path_);
    path_ = std::move(other.path_);
    file_ = std::exchange(other.file_, -1);
    writes_ = other.writes_;
  }
  return *this;
}

int64_t H5File::id() const {
  if (file_ < 0) throw std::logic_error(path_ + ": HDF5 file is closed");
  h5::silence_errors();
  return file_;
}

void H5File::close() {
  if (file_ < 0) return;
  h5::silence_errors();
  const herr_t status = H5Fclose(std::exchange(file_, -1));
  if (status < 0) throw std::runtime_error(path_ + ": cannot close HDF5 file" + h5::reason());
  if (writes_) h5::remember_written(path_);
}

void H5File::flush() {
  if (H5Fflush(id(), H5F_SCOPE_LOCAL) < 0) throw std::runtime_error(path_ + ": cannot flush" + h5::reason());
}

void H5File::write(const std::string& name, const at::Tensor& tensor) {
  const hid_t file = id();
  const std::string normalized = normalize(name);
  const std::string where = path_ + ": dataset " + quoted(name);
  if (normalized.empty()) throw std::invalid_argument(path_ + ": a dataset needs a name");
  const h5::Layout layout = h5::layout_of(tensor.scalar_type(), where);
  const at::Tensor data = tensor.cpu().contiguous();
  make_parent_groups(file, path_, normalized);
  if (H5Lexists(file, normalized.c_str(), H5P_DEFAULT) > 0 && H5Ldelete(file, normalized.c_str(), H5P_DEFAULT) < 0) {
    throw std::runtime_error(where + ": cannot replace" + h5::reason());
  }
  const std::vector<hsize_t> dims = to_hsize(data.sizes());
  Handle space = make_space(dims);
  // Scalars and empty tensors cannot be chunked (nor a single row of 1 GiB or
  // more, which no model has): those are stored whole, without a checksum.
  Handle create_plist;
  const size_t row_bytes = data.dim() > 0 && data.size(0) > 0 ? data.nbytes() / data.size(0) : 0;
  if (data.numel() > 0 && data.dim() > 0 && row_bytes <= kMaxWriteChunkBytes) {
    std::vector<hsize_t> chunk = dims;
    chunk[0] = std::min<hsize_t>(dims[0], std::max<size_t>(1, kWriteChunkBytes / row_bytes));
    create_plist = checksummed_layout(chunk);
  }
  Handle dataset(H5Dcreate2(file, normalized.c_str(), layout.file_type, space.get(), H5P_DEFAULT,
                            create_plist.valid() ? create_plist.get() : H5P_DEFAULT, H5P_DEFAULT),
                 H5Dclose);
  if (!dataset.valid()) throw std::runtime_error(where + ": cannot create" + h5::reason());
  if (data.numel() > 0 &&
      H5Dwrite(dataset.get(), layout.memory_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, data.data_ptr()) < 0) {
    throw std::runtime_error(where + ": cannot write" + h5::reason());
  }
  write_attr(dataset.get(), kDtypeAttr, std::string(layout.name), where);
}

void H5File::append(const std::string& name, const at::Tensor& rows) {
  const hid_t file = id();
  const std::string normalized = normalize(name);
  const std::string where = path_ + ": dataset " + quoted(name);
  if (rows.dim() == 0) throw std::invalid_argument(where + ": cannot append a 0-d tensor; rows run along dim 0");
  const h5::Layout layout = h5::layout_of(rows.scalar_type(), where);
  const at::Tensor data = rows.cpu().contiguous();

  if (!link_exists(file, normalized)) {
    std::vector<hsize_t> dims = to_hsize(data.sizes()), max_dims = dims, chunk = dims;
    dims[0] = 0;
    max_dims[0] = H5S_UNLIMITED;
    const size_t row_elements = std::accumulate(chunk.begin() + 1, chunk.end(), size_t{1}, std::multiplies<>());
    if (row_elements == 0) throw std::invalid_argument(where + ": cannot append rows with a zero-sized dimension");
    chunk[0] = std::max<size_t>(1, kChunkBytes / (row_elements * data.element_size()));
    Handle plist = checksummed_layout(chunk);
    make_parent_groups(file, path_, normalized);
    Handle space = make_space(dims, max_dims);
    Handle dataset(
        H5Dcreate2(file, normalized.c_str(), layout.file_type, space.get(), H5P_DEFAULT, plist.get(), H5P_DEFAULT),
        H5Dclose);
    if (!dataset.valid()) throw std::runtime_error(where + ": cannot create" + h5::reason());
    write_attr(dataset.get(), kDtypeAttr, std::string(layout.name), where);
  }

  Handle dataset = open_dataset(file, path_, name);
  Handle space(H5Dget_space(dataset.get()), H5Sclose);
  std::vector<hsize_t> dims(H5Sget_simple_extent_ndims(space.get())), max_dims(dims.size());
  H5Sget_simple_extent_dims(space.get(), dims.data(), max_dims.data());
  if (dims.empty() || max_dims[0] != H5S_UNLIMITED)
    throw UsageError(where + " was not made by append() and cannot grow");
  const c10::ScalarType stored = stored_dtype(dataset.get(), where);
  if (stored != rows.scalar_type()) {
    throw UsageError(where + " holds " + h5::layout_of(stored, where).name + ", not " + layout.name);
  }
  std::vector<int64_t> row_shape(dims.begin() + 1, dims.end());
  if (!std::equal(row_shape.begin(), row_shape.end(), data.sizes().begin() + 1, data.sizes().end())) {
    throw UsageError(where + " has rows of shape " + shape_text(row_shape) + ", not " +
                     shape_text(data.sizes().slice(1)));
  }
  if (data.numel() == 0) return;

  std::vector<hsize_t> start(dims.size(), 0), count = to_hsize(data.sizes());
  start[0] = dims[0];
  dims[0] += count[0];
  if (H5Dset_extent(dataset.get(), dims.data()) < 0) throw std::runtime_error(where + ": cannot grow" + h5::reason());
  Handle file_space(H5Dget_space(dataset.get()), H5Sclose);
  Handle memory_space = make_space(count);
  if (H5Sselect_hyperslab(file_space.get(), H5S_SELECT_SET, start.data(), nullptr, count.data(), nullptr) < 0 ||
      H5Dwrite(dataset.get(), layout.memory_type, memory_space.get(), file_space.get(), H5P_DEFAULT, data.data_ptr()) <
          0) {
    throw std::runtime_error(where + ": cannot append" + h5::reason());
  }
}

at::Tensor H5File::read(const std::string& name) const {
  Handle dataset = open_dataset(id(), path_, name);
  return read_dataset(dataset.get(), path_ + ": dataset " + quoted(name), 0, -1);
}

at::Tensor H5File::read_rows(const std::string& name, int64_t begin, int64_t end) const {
  Handle dataset = open_dataset(id(), path_, name);
  const std::string where = path_ + ": dataset " + quoted(name);
  Handle space(H5Dget_space(dataset.get()), H5Sclose);
  const std::vector<int64_t> dims = dims_of(space.get());
  if (dims.empty()) throw UsageError(where + " is a scalar and has no rows");
  if (begin < 0 || end < begin || end > dims[0]) {
    throw UsageError(path_ + ": rows [" + std::to_string(begin) + ", " + std::to_string(end) +
                     ") are out of range for dataset " + quoted(name) + " with " + std::to_string(dims[0]) + " rows");
  }
  return read_dataset(dataset.get(), where, begin, end - begin);
}

std::vector<int64_t> H5File::shape(const std::string& name) const {
  Handle dataset = open_dataset(id(), path_, name);
  Handle space(H5Dget_space(dataset.get()), H5Sclose);
  return dims_of(space.get());
}

bool H5File::has(const std::string& name) const { return link_exists(id(), normalize(name)); }

void H5File::create_group(const std::string& name) {
  const std::string normalized = normalize(name);
  if (!normalized.empty()) make_parent_groups(id(), path_, normalized + "/");
}

std::vector<std::string> H5File::list(const std::string& group) const {
  Handle object = open_object(id(), path_, group, "group");
  if (H5Iget_type(object.get()) != H5I_GROUP)
    throw UsageError(path_ + ": " + quoted(group) + " is a dataset, not a group");
  Handle plist(H5Gget_create_plist(object.get()), H5Pclose);
  unsigned order_flags = 0;
  H5Pget_link_creation_order(plist.get(), &order_flags);
  const H5_index_t index = (order_flags & H5P_CRT_ORDER_INDEXED) ? H5_INDEX_CRT_ORDER : H5_INDEX_NAME;
  H5G_info_t info;
  if (H5Gget_info(object.get(), &info) < 0) throw_unreadable(path_, "cannot list " + object_label(group));
  // By index rather than H5Literate, whose callback type changed in HDF5 1.12.
  std::vector<std::string> names;
  for (hsize_t i = 0; i < info.nlinks; ++i) {
    const ssize_t size = H5Lget_name_by_idx(object.get(), ".", index, H5_ITER_INC, i, nullptr, 0, H5P_DEFAULT);
    std::string name(std::max<ssize_t>(size, 0), '\0');
    if (size < 0 ||
        H5Lget_name_by_idx(object.get(), ".", index, H5_ITER_INC, i, name.data(), name.size() + 1, H5P_DEFAULT) < 0) {
      throw_unreadable(path_, "cannot list " + object_label(group));
    }
    names.push_back(std::move(name));
  }
  return names;
}

void H5File::set_attr(const std::string& object, const std::string& key, const AttrValue& value) {
  Handle handle = open_object(id(), path_, object, "object");
  write_attr(handle.get(), key, value, path_ + ": " + object_label(object));
}

bool H5File::has_attr(const std::string& object, const std::string& key) const {
  const hid_t file = id();
  const std::string normalized = normalize(object);
  if (!link_exists(file, normalized)) return false;
  Handle handle(H5Oopen(file, h5_name(normalized).c_str(), H5P_DEFAULT), H5Oclose);
  return handle.valid() && H5Aexists(handle.get(), key.c_str()) > 0;
}

AttrValue H5File::attr(const std::string& object, const std::string& key) const {
  Handle handle = open_object(id(), path_, object, "object");
  const std::string where = path_ + ": attribute " + quoted(key) + " of " + object_label(object);
  if (H5Aexists(handle.get(), key.c_str()) <= 0) {
    throw UsageError(path_ + ": no attribute " + quoted(key) + " on " + object_label(object));
  }
  return read_attr(handle.get(), key, where);
}

std::string H5File::attr_string(const std::string& object, const std::string& key) const {
  return attr_as<std::string>(attr(object, key), path_ + ": attribute " + quoted(key) + " of " + object_label(object),
                              "a string");
}

int64_t H5File::attr_int(const std::string& object, const std::string& key) const {
  return attr_as<int64_t>(attr(object, key), path_ + ": attribute " + quoted(key) + " of " + object_label(object),
                          "an int64");
}

double H5File::attr_double(const std::string& object, const std::string& key) const {
  const AttrValue value = attr(object, key);
  if (const auto* i = std::get_if<int64_t>(&value)) return static_cast<double>(*i);
  return attr_as<double>(value, path_ + ": attribute " + quoted(key) + " of " + object_label(object), "a double");
}

std::vector<std::string> H5File::attr_names(const std::string& object) const {
  Handle handle = open_object(id(), path_, object, "object");
  std::vector<std::string> names;
  const herr_t status = H5Aiterate2(
      handle.get(), H5_INDEX_NAME, H5_ITER_INC, nullptr,
      [](hid_t, const char* name, const H5A_info_t*, void* out) -> herr_t {
        static_cast<std::vector<std::string>*>(out)->emplace_back(name);
        return 0;
      },
      &names);
  if (status < 0) throw_unreadable(path_, "cannot list attributes of " + object_label(object));
  return names;
}

std::string hdf5_version() {
  unsigned major = 0, minor = 0, release = 0;
  H5get_libversion(&major, &minor, &release);
  return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(release);
}

}  // namespace tandem
