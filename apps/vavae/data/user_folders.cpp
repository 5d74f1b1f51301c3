#include "data/user_folders.h"

#include <algorithm>
#include <cctype>
#include <filesystem>

#include "tandem/error.h"

namespace vavae {
namespace fs = std::filesystem;
using tandem::UsageError;

namespace {

// N of "user<N>", or 0 when the name is anything else (user0, user01x, User1).
int64_t user_number(const std::string& name) {
  const std::string prefix = "user";
  if (name.rfind(prefix, 0) != 0 || name.size() == prefix.size() || name.size() > prefix.size() + 9) return 0;
  const std::string digits = name.substr(prefix.size());
  if (!std::all_of(digits.begin(), digits.end(), [](unsigned char c) { return std::isdigit(c); })) return 0;
  return std::stoll(digits);
}

}  // namespace

bool is_image_name(const std::string& name) {
  std::string ext = fs::path(name).extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return std::tolower(c); });
  return ext == ".png" || ext == ".jpg" || ext == ".jpeg";
}

ImageSplit scan_split(const std::string& root, const std::string& split, const std::string& key) {
  const fs::path folder = fs::path(root) / split;
  if (root.empty()) throw UsageError(key + " is not set: give the data_split folder (--data-root DIR)");
  if (!fs::is_directory(folder))
    throw UsageError(key + ": " + folder.string() + " is not a folder (expected " + split +
                     "/user1, user2, ... under " + root + ")");
  std::vector<std::pair<int64_t, fs::path>> users;
  for (const auto& entry : fs::directory_iterator(folder)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind('.', 0) == 0) continue;
    const int64_t n = user_number(name);
    if (!entry.is_directory() || n < 1)
      throw UsageError(key + ": " + entry.path().string() +
                       ": expected only folders named user<N> (N = 1, 2, ...) in " + folder.string());
    users.emplace_back(n, entry.path());
  }
  if (users.empty()) throw UsageError(key + ": " + folder.string() + " holds no user<N> folders");
  std::sort(users.begin(), users.end());
  for (size_t i = 1; i < users.size(); ++i)
    if (users[i].first == users[i - 1].first)
      throw UsageError(key + ": " + users[i].second.string() + " and " + users[i - 1].second.string() +
                       " name the same user");
  ImageSplit out;
  out.folder = folder.string();
  for (const auto& [n, dir] : users) {
    std::vector<std::string> files;
    for (const auto& entry : fs::directory_iterator(dir))
      if (entry.is_regular_file() && is_image_name(entry.path().filename().string()))
        files.push_back(entry.path().string());
    if (files.empty()) throw UsageError(key + ": " + dir.string() + " holds no .png, .jpg or .jpeg images");
    std::sort(files.begin(), files.end());
    for (auto& f : files) out.items.push_back({std::move(f), n});
    out.num_users = std::max(out.num_users, n);
  }
  return out;
}

TrainVal scan_train_val(const DataKeys& data) {
  return {scan_split(data.root, "train", "data.root"), scan_split(data.root, "val", "data.root")};
}

}  // namespace vavae
