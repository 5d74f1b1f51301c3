#pragma once
// A private folder for files that are written first and renamed into place
// after, so readers never see half a file; removed with everything left in it
// when it goes out of scope, also when an exception unwinds.
#include <filesystem>

namespace tandem {

class TempDir {
 public:
  // Creates a hidden folder ".<stem>-XXXXXX" inside `parent`, on the same file
  // system as the files' destinations, so moving them out is a rename.
  // Throws std::runtime_error naming `parent` when it cannot.
  explicit TempDir(const std::filesystem::path& parent, const std::string& stem = "tmp");
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

}  // namespace tandem
