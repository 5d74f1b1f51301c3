#pragma once
// Private to io/: ownership of HDF5 identifiers and the text of HDF5's errors.
#include <hdf5.h>

#include <string>
#include <utility>

namespace tandem::h5 {

// Owns one HDF5 identifier and closes it with the matching H5?close function.
class Handle {
 public:
  using Closer = herr_t (*)(hid_t);

  Handle() = default;
  Handle(hid_t id, Closer close) : id_(id), close_(close) {}
  Handle(Handle&& other) noexcept : id_(std::exchange(other.id_, H5I_INVALID_HID)), close_(other.close_) {}
  Handle& operator=(Handle&& other) noexcept {
    if (this != &other) {
      reset();
      id_ = std::exchange(other.id_, H5I_INVALID_HID);
      close_ = other.close_;
    }
    return *this;
  }
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;
  ~Handle() { reset(); }

  hid_t get() const { return id_; }
  bool valid() const { return id_ >= 0; }

 private:
  void reset() {
    if (id_ >= 0) close_(id_);
    id_ = H5I_INVALID_HID;
  }

  hid_t id_ = H5I_INVALID_HID;
  Closer close_ = nullptr;
};

// HDF5 prints its error stack to stderr by default; we throw instead. The
// setting is per thread in thread-safe builds, so every entry point calls this.
void silence_errors();

// The innermost message on this thread's HDF5 error stack, as " (HDF5: ...)",
// or "" when the stack is empty; appended to I/O fault messages.
std::string reason();

// How a file that opens but cannot be read through is named, after the file
// and object: `what` failed, the file is damaged (truncated in a copy, a
// flipped byte in its metadata), and HDF5's reason, which names a lock held by
// another program when that is the cause.
std::string unreadable(const std::string& what);

// Whether the dataset's filters include one that changes its size (such as
// gzip); Fletcher-32 only adds a checksum.
bool compressed(hid_t dataset);

}  // namespace tandem::h5
