#pragma once
// Private to io/: a file's first reading, done in another process. libhdf5
// can crash or loop forever on a crafted or badly damaged file, and nothing
// its caller checks can prevent that; tandem-h5walk (libcore/tools/h5_walk.cpp)
// reads the whole file first, so that such a file stops the run with a
// UsageError naming it rather than a signal or a hang.
#include <string>

namespace tandem::h5 {

// How tandem-h5walk ends when the file is at fault: kWalkDamaged after writing
// what HDF5 failed to read, kWalkMemoryError when AddressSanitizer caught
// libhdf5 reading or freeing memory it should not.
constexpr int kWalkDamaged = 3;
constexpr int kWalkMemoryError = 86;

// Throws a UsageError naming `path` when the walk crashed, failed, or read
// nothing for TANDEM_H5_STALL_S seconds (default 60). A file is walked once
// per process (known by device, inode, size and modification time; a file
// refused once is refused again with the same message); files this process
// wrote are not walked. Without tandem-h5walk (build folder
// moved, TANDEM_H5_WALK unset) it warns once and lets the file be read.
void walk_first(const std::string& path);

// Marks a file this process has just written and closed as needing no walk.
void remember_written(const std::string& path);

// Whether a walk read the file at `path`, as it is now, whole and found
// nothing wrong: false for a file this process wrote, or when no walker ran.
bool walked(const std::string& path);

}  // namespace tandem::h5
