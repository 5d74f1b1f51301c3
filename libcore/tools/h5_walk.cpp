// tandem-h5walk FILE FD: reads every group, attribute and dataset of one HDF5
// file the way tandem's reader (io/h5file.cpp) does, writing a '.' to FD as
// each is done. The first thing HDF5 fails to read ends the walk: '!' and the
// failure, naming the object, are written to FD and the exit status is
// kWalkDamaged (io/h5_guard.h).
//
// It exists to fail in tandem's place. libhdf5 itself can crash or loop
// forever on a crafted or badly damaged file (found by tests/fuzz, fuzz_h5),
// often in a call made after an earlier one reported damage, and nothing the
// library's caller checks can stop that. io/h5_guard.cpp runs the walk before
// a program opens a file, and refuses the file when the walk reports damage,
// dies, or goes quiet.
//
// It links HDF5 and c10 only (no LibTorch), so it starts in milliseconds, and
// it runs under AddressSanitizer (libcore/CMakeLists.txt).
#include <hdf5.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <exception>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "../src/io/h5_guard.h"
#include "../src/io/h5_handle.h"
#include "../src/io/h5_types.h"

// libhdf5 keeps what it allocated for a file it gave up on, and the walker
// exits right after: leaks are not findings here. An allocation no memory can
// meet (a size a damaged header claims) fails as malloc would, for HDF5 to
// report. A memory error ends the walk with a status of its own, so that the
// program can say what happened.
static_assert(tandem::h5::kWalkMemoryError == 86, "exitcode below");
extern "C" const char* __asan_default_options() { return "detect_leaks=0:allocator_may_return_null=1:exitcode=86"; }

namespace {

using tandem::h5::Handle;

int g_progress = -1;

void send(const std::string& bytes) {
  // Written whole or not at all: a pipe write of fewer than PIPE_BUF bytes is atomic.
  if (write(g_progress, bytes.data(), bytes.size()) < 0) std::_Exit(0);  // the program stopped waiting
}

void tick() { send("."); }

// Ends the walk at the first failure, naming the object as tandem's reader does.
[[noreturn]] void damaged(const std::string& object, const std::string& what) {
  std::string message = "!" + tandem::h5::unreadable(object + what);
  message.resize(std::min<size_t>(message.size(), 4000));
  send(message);
  std::_Exit(tandem::h5::kWalkDamaged);
}

std::string quoted(const std::string& name) { return "'" + name + "'"; }

std::string label(const std::string& path) { return path.empty() ? "the root group" : quoted(path); }

std::string child(const std::string& group, const std::string& name) { return group.empty() ? name : group + "/" + name; }

// Datasets larger than this are read in blocks of rows, as read_rows() does;
// smaller ones whole, as read() does.
constexpr uint64_t kBlockBytes = uint64_t{64} << 20;

// Hard links can make a group its own descendant; each object is walked once.
std::string object_key(hid_t object) {
#if H5_VERSION_GE(1, 12, 0)
  H5O_info2_t info;
  if (H5Oget_info3(object, &info, H5O_INFO_BASIC) < 0) return {};
  return std::string(reinterpret_cast<const char*>(&info.token), sizeof info.token);
#else
  H5O_info_t info;
  if (H5Oget_info2(object, &info, H5O_INFO_BASIC) < 0) return {};
  return std::to_string(info.addr);
#endif
}

// A scalar attribute's value, read as tandem reads it (attrs of other shapes
// and classes are refused by tandem without a read). Returns the text of a
// string attribute.
std::string read_attribute(hid_t object, const std::string& key, const std::string& where) {
  Handle attr(H5Aopen(object, key.c_str(), H5P_DEFAULT), H5Aclose);
  if (!attr.valid()) damaged(where, ": cannot open");
  Handle type(H5Aget_type(attr.get()), H5Tclose);
  Handle space(H5Aget_space(attr.get()), H5Sclose);
  if (!type.valid() || !space.valid()) damaged(where, ": cannot open");
  if (H5Sget_simple_extent_npoints(space.get()) != 1) return {};
  std::string text;
  herr_t status = 0;
  switch (H5Tget_class(type.get())) {
    case H5T_INTEGER: {
      int64_t value = 0;
      status = H5Aread(attr.get(), H5T_NATIVE_INT64, &value);
      break;
    }
    case H5T_FLOAT: {
      double value = 0;
      status = H5Aread(attr.get(), H5T_NATIVE_DOUBLE, &value);
      break;
    }
    case H5T_STRING:
      if (H5Tis_variable_str(type.get()) > 0) {
        Handle memory(H5Tcopy(H5T_C_S1), H5Tclose);
        H5Tset_size(memory.get(), H5T_VARIABLE);
        H5Tset_cset(memory.get(), H5Tget_cset(type.get()));
        char* value = nullptr;
        status = H5Aread(attr.get(), memory.get(), &value);
        if (status >= 0 && value != nullptr) text = value;
        H5free_memory(value);
      } else {
        Handle memory(H5Tcopy(type.get()), H5Tclose);
        text.assign(H5Tget_size(type.get()), '\0');
        status = H5Aread(attr.get(), memory.get(), text.data());
        text.resize(std::min(text.find('\0'), text.size()));
      }
      break;
    default:
      break;
  }
  if (status < 0) damaged(where, ": cannot read");
  return text;
}

void read_attributes(hid_t object, const std::string& path) {
  std::vector<std::string> names;
  const herr_t status = H5Aiterate2(
      object, H5_INDEX_NAME, H5_ITER_INC, nullptr,
      [](hid_t, const char* name, const H5A_info_t*, void* out) -> herr_t {
        static_cast<std::vector<std::string>*>(out)->emplace_back(name);
        return 0;
      },
      &names);
  if (status < 0) damaged("", "cannot list attributes of " + label(path));
  for (const std::string& name : names) {
    if (H5Aexists(object, name.c_str()) <= 0) damaged("", "cannot list attributes of " + label(path));
    read_attribute(object, name, "attribute " + quoted(name) + " of " + label(path));
    tick();
  }
}

// Memory for the values read, kept from one dataset to the next: fresh pages
// for each (and their zeroing) cost more than the reading itself.
char* buffer_of(uint64_t bytes) {
  static std::unique_ptr<char[]> buffer;
  static uint64_t size = 0;
  if (bytes > size) {
    buffer.reset();
    buffer.reset(new char[bytes]);
    size = bytes;
  }
  return buffer.get();
}

// The dataset's values, read into the memory type tandem reads them into:
// whole, or in blocks of rows with a hyperslab selection; with `values`
// false, all but the values.
void read_dataset(hid_t dataset, const std::string& path, bool values) {
  const std::string where = "dataset " + quoted(path);
  Handle type(H5Dget_type(dataset), H5Tclose);
  Handle space(H5Dget_space(dataset), H5Sclose);
  if (!type.valid() || !space.valid()) damaged(where, ": cannot open");
  std::string dtype_attr;
  if (H5Aexists(dataset, "dtype") > 0) dtype_attr = read_attribute(dataset, "dtype", where + ": attribute 'dtype'");
  c10::ScalarType dtype;
  try {
    dtype = tandem::h5::dtype_of(type.get(), dtype_attr, "");
  } catch (const std::exception&) {
    return;  // a type tandem refuses before reading
  }
  const c10::ScalarType buffer_dtype = dtype == c10::kBool ? c10::kByte : dtype;
  const hid_t memory_type = tandem::h5::layout_of(buffer_dtype, "").memory_type;
  const int rank = H5Sget_simple_extent_ndims(space.get());
  if (rank < 0) damaged(where, ": cannot open");
  std::vector<hsize_t> dims(rank);
  H5Sget_simple_extent_dims(space.get(), dims.data(), nullptr);
  uint64_t row_bytes = c10::elementSize(buffer_dtype);
  for (int d = 1; d < rank; ++d) {
    if (dims[d] != 0 && row_bytes > UINT64_MAX / dims[d]) return;  // refused by tandem's size check
    row_bytes *= dims[d];
  }
  const uint64_t rows = rank > 0 ? dims[0] : 1;
  if (rows != 0 && row_bytes > UINT64_MAX / rows) return;
  const uint64_t bytes = row_bytes * rows;
  if (bytes == 0 || !values) return;
  if (!tandem::h5::compressed(dataset)) {
    Handle file(H5Iget_file_id(dataset), H5Fclose);
    hsize_t file_size = 0;
    if (file.valid() && H5Fget_filesize(file.get(), &file_size) >= 0 && bytes > file_size) return;
  }
  if (rank == 0 || bytes <= kBlockBytes) {
    if (H5Dread(dataset, memory_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, buffer_of(bytes)) < 0)
      damaged(where, ": cannot read");
    tick();
    return;
  }
  const uint64_t block_rows = std::max<uint64_t>(1, kBlockBytes / row_bytes);
  char* buffer = buffer_of(row_bytes * block_rows);
  for (uint64_t begin = 0; begin < rows; begin += block_rows) {
    std::vector<hsize_t> start(rank, 0), count(dims);
    start[0] = begin;
    count[0] = std::min(block_rows, rows - begin);
    Handle memory_space(H5Screate_simple(rank, count.data(), nullptr), H5Sclose);
    if (H5Sselect_hyperslab(space.get(), H5S_SELECT_SET, start.data(), nullptr, count.data(), nullptr) < 0)
      damaged(where, ": cannot select rows");
    if (H5Dread(dataset, memory_type, memory_space.get(), space.get(), H5P_DEFAULT, buffer) < 0)
      damaged(where, ": cannot read");
    tick();
  }
}

// tandem's readers take a file in two orders: a checkpoint's groups and
// datasets, then the root's attributes (load_checkpoint), or the root's
// attributes first (the config a model file carries). What HDF5 does with
// damaged metadata can depend on what it read before, so the walk is made in
// both; the values are read in the first only.
enum class Order { kLinksFirst, kAttributesFirst };

void walk_group(hid_t group, const std::string& path, Order order, std::set<std::string>& seen) {
  if (order == Order::kAttributesFirst) read_attributes(group, path);
  Handle plist(H5Gget_create_plist(group), H5Pclose);
  unsigned order_flags = 0;
  if (!plist.valid() || H5Pget_link_creation_order(plist.get(), &order_flags) < 0)
    damaged("", "cannot list " + label(path));
  const H5_index_t index = (order_flags & H5P_CRT_ORDER_INDEXED) ? H5_INDEX_CRT_ORDER : H5_INDEX_NAME;
  H5G_info_t info;
  if (H5Gget_info(group, &info) < 0) damaged("", "cannot list " + label(path));
  std::vector<std::string> names;
  for (hsize_t i = 0; i < info.nlinks; ++i) {
    const ssize_t size = H5Lget_name_by_idx(group, ".", index, H5_ITER_INC, i, nullptr, 0, H5P_DEFAULT);
    std::string name(std::max<ssize_t>(size, 0), '\0');
    if (size < 0 || H5Lget_name_by_idx(group, ".", index, H5_ITER_INC, i, name.data(), name.size() + 1, H5P_DEFAULT) < 0)
      damaged("", "cannot list " + label(path));
    names.push_back(std::move(name));
  }
  for (const std::string& name : names) {
    const std::string object_path = child(path, name);
    // Only hard links: soft and external ones lead to objects walked in their
    // own place, or to other files, which are walked when opened.
    H5L_info_t link;
    if (H5Lexists(group, name.c_str(), H5P_DEFAULT) <= 0 || H5Lget_info(group, name.c_str(), &link, H5P_DEFAULT) < 0)
      damaged("", "cannot open " + quoted(object_path));
    if (link.type != H5L_TYPE_HARD) continue;
    Handle object(H5Oopen(group, name.c_str(), H5P_DEFAULT), H5Oclose);
    if (!object.valid()) damaged("", "cannot open " + quoted(object_path));
    tick();
    if (!seen.insert(object_key(object.get())).second) continue;
    switch (H5Iget_type(object.get())) {
      case H5I_DATASET:
        read_dataset(object.get(), object_path, order == Order::kLinksFirst);
        read_attributes(object.get(), object_path);
        break;
      case H5I_GROUP:
        walk_group(object.get(), object_path, order, seen);
        break;
      default:
        break;
    }
  }
  if (order == Order::kLinksFirst) read_attributes(group, path);
}

// One walk of the file, from opening it to closing it. A file HDF5 cannot
// open is left to the program, which names it the same way.
void walk(const char* file_path, Order order) {
  Handle file(H5Fopen(file_path, H5F_ACC_RDONLY, H5P_DEFAULT), H5Fclose);
  if (!file.valid()) std::_Exit(0);
  Handle root(H5Oopen(file.get(), "/", H5P_DEFAULT), H5Oclose);
  if (!root.valid()) damaged("", "cannot open the root group");
  tick();
  std::set<std::string> seen{object_key(root.get())};
  walk_group(root.get(), "", order, seen);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) return 64;
  g_progress = std::atoi(argv[2]);
  tick();  // started: what goes wrong from here is the file's doing
  tandem::h5::silence_errors();
  const char* path = argv[1];
#if H5_VERSION_GE(1, 12, 0)
  if (H5Fis_accessible(path, H5P_DEFAULT) <= 0) return 0;
#else
  if (H5Fis_hdf5(path) <= 0) return 0;
#endif
  try {
    walk(path, Order::kLinksFirst);
    walk(path, Order::kAttributesFirst);
  } catch (const std::bad_alloc&) {
    // A claimed size no allocation can meet: tandem's reader refuses it too.
  }
  return 0;
}
