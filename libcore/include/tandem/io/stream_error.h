#pragma once
// Why a C++ stream's write failed, for messages ("PATH: cannot write: No space
// left on device"). Streams keep no error code: the failing write(2) leaves
// errno, which callers clear before writing; a failure that left none is EIO.
#include <cerrno>
#include <cstring>
#include <string>

namespace tandem {

inline std::string stream_error() { return std::strerror(errno ? errno : EIO); }

}  // namespace tandem
