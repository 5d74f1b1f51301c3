#pragma once
// Where ../shared/data is (see /shared/data/README.md): the build names it
// with TANDEM_SHARED_DATA; otherwise it is looked for beside each folder
// above the working directory. Tests that need it skip when it is absent.
#include <filesystem>
#include <string>

namespace carotid::testing {

// The path of `relative` (e.g. "breast_ultrasound/label.xlsx") under the
// shared data folder, or "" when it is not there.
inline std::string shared_data(const std::string& relative) {
  namespace fs = std::filesystem;
#ifdef TANDEM_SHARED_DATA
  if (fs::exists(fs::path(TANDEM_SHARED_DATA) / relative)) return (fs::path(TANDEM_SHARED_DATA) / relative).string();
#endif
  std::error_code ec;
  for (fs::path dir = fs::current_path(ec); !ec && !dir.empty(); dir = dir.parent_path()) {
    const fs::path candidate = dir / "shared" / "data" / relative;
    if (fs::exists(candidate, ec)) return candidate.string();
    if (dir == dir.parent_path()) break;
  }
  return "";
}

}  // namespace carotid::testing
