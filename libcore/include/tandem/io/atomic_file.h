#pragma once
// Replacing a file so that a crash at any moment leaves at its path either the
// old file whole or the new one whole, never a mix or an empty file.
#include <functional>
#include <string>

namespace tandem {

// A hidden name beside `path`, unique to this process: "dir/.name.tmp-<pid>".
std::string temp_path_for(const std::string& path);

// Calls write(temp_path_for(path)), which must create, fill and close that
// file; then fsyncs it, renames it over `path` and fsyncs the directory. If
// anything throws, the temporary file is removed and the exception rethrown;
// failures of its own throw std::runtime_error naming the file and the
// system's reason.
void replace_atomically(const std::string& path, const std::function<void(const std::string& temp)>& write);

// `bytes` as the whole of the file at `path`, replaced as above; a short
// write (a full disk) throws std::runtime_error naming the file.
void write_bytes_atomically(const std::string& path, const std::string& bytes);

}  // namespace tandem
