#include "data/person_folders.h"

#include <algorithm>
#include <filesystem>
#include <map>
#include <string>
#include <system_error>
#include <unordered_map>
#include <vector>

#include "tandem/error.h"
#include "tandem/random.h"
#include "tandem/text/message_text.h"

namespace carotid {
namespace {

namespace fs = std::filesystem;

bool hidden(const fs::path& path) {
  const std::string name = path.filename().string();
  return !name.empty() && name[0] == '.';
}

// Every image below `dir`, skipping hidden files and folders.
std::vector<std::string> images_below(const fs::path& dir) {
  std::vector<std::string> images;
  std::error_code ec;
  fs::recursive_directory_iterator it(dir, fs::directory_options::skip_permission_denied, ec);
  if (ec) throw tandem::UsageError(dir.string() + ": cannot list: " + ec.message());
  for (const fs::recursive_directory_iterator end; it != end; it.increment(ec)) {
    if (ec) throw tandem::UsageError(dir.string() + ": cannot list: " + ec.message());
    if (hidden(it->path())) {
      if (it->is_directory(ec)) it.disable_recursion_pending();
      continue;
    }
    if (it->is_regular_file(ec) && is_image_file(it->path().string())) images.push_back(it->path().string());
  }
  std::sort(images.begin(), images.end());
  return images;
}

// "007" -> "7", "0" -> "0"; empty for anything that is not all digits.
std::string number_key(const std::string& id) {
  if (id.empty() || !std::all_of(id.begin(), id.end(), [](char c) { return c >= '0' && c <= '9'; })) return "";
  const size_t first = id.find_first_not_of('0');
  return first == std::string::npos ? "0" : id.substr(first);
}

std::string count_of(size_t n, const char* one, const char* many) {
  return std::to_string(n) + " " + (n == 1 ? one : many);
}

constexpr size_t kNoFolder = static_cast<size_t>(-1);

// The folder of each id of the sheet (kNoFolder for none). Exact names
// first, so that a folder "7" is never taken from person 7 by person "007";
// then the leading-zero fallback, only where it is unambiguous. `taken`
// marks the folders given to some id.
std::vector<size_t> folder_of_each_id(const LabelSheet& labels, const std::vector<PersonFolder>& folders,
                                      std::vector<bool>& taken) {
  std::unordered_map<std::string, size_t> by_name;
  std::unordered_map<std::string, std::vector<size_t>> by_number;
  for (size_t f = 0; f < folders.size(); ++f) {
    by_name[folders[f].id] = f;
    const std::string key = number_key(folders[f].id);
    if (!key.empty()) by_number[key].push_back(f);
  }
  std::vector<size_t> folder_of(labels.ids.size(), kNoFolder);
  taken.assign(folders.size(), false);
  for (size_t i = 0; i < labels.ids.size(); ++i) {
    const auto found = by_name.find(labels.ids[i]);
    if (found != by_name.end()) {
      folder_of[i] = found->second;
      taken[found->second] = true;
    }
  }
  for (size_t i = 0; i < labels.ids.size(); ++i) {
    if (folder_of[i] != kNoFolder) continue;
    const std::string key = number_key(labels.ids[i]);
    const auto found = key.empty() ? by_number.end() : by_number.find(key);
    if (found == by_number.end() || found->second.size() != 1 || taken[found->second[0]]) continue;
    folder_of[i] = found->second[0];
    taken[found->second[0]] = true;
  }
  return folder_of;
}

}  // namespace

bool is_image_file(const std::string& path) {
  std::string extension = fs::path(path).extension().string();
  for (char& c : extension)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  return extension == ".png" || extension == ".jpg" || extension == ".jpeg" || extension == ".bmp";
}

std::vector<PersonFolder> scan_person_folders(const std::string& root, const std::string& root_key) {
  std::error_code ec;
  if (!fs::exists(root, ec))
    throw tandem::UsageError(root + ": no such folder (set " + root_key +
                             " to the folder with one sub-folder of images per person)");
  if (!fs::is_directory(root, ec))
    throw tandem::UsageError(root + ": is not a folder (set " + root_key +
                             " to the folder with one sub-folder of images per person)");
  std::vector<PersonFolder> folders;
  fs::directory_iterator it(root, ec);
  if (ec) throw tandem::UsageError(root + ": cannot list: " + ec.message());
  for (const fs::directory_iterator end; it != end; it.increment(ec)) {
    if (ec) throw tandem::UsageError(root + ": cannot list: " + ec.message());
    if (hidden(it->path()) || !it->is_directory(ec)) continue;  // follows a link
    PersonFolder folder;
    folder.id = it->path().filename().string();
    folder.dir = it->path().string();
    folder.images = images_below(it->path());
    folders.push_back(std::move(folder));
  }
  std::sort(folders.begin(), folders.end(), [](const PersonFolder& a, const PersonFolder& b) { return a.id < b.id; });
  return folders;
}

PersonMatch match_persons(const LabelSheet& labels, const std::vector<PersonFolder>& folders, const std::string& root) {
  std::vector<bool> taken;
  const std::vector<size_t> folder_of = folder_of_each_id(labels, folders, taken);
  PersonMatch match;
  for (size_t i = 0; i < labels.ids.size(); ++i) {
    if (folder_of[i] == kNoFolder) {
      match.without_folder.push_back(labels.ids[i]);
      continue;
    }
    const PersonFolder& folder = folders[folder_of[i]];
    if (folder.images.empty()) {
      match.without_images.push_back(labels.ids[i]);
      continue;
    }
    match.persons.push_back(Person{labels.ids[i], labels.labels[i], folder.images, labels.rows[i]});
    match.image_count += static_cast<int64_t>(folder.images.size());
  }
  for (size_t f = 0; f < folders.size(); ++f)
    if (!taken[f]) match.without_label.push_back(folders[f].id);

  if (match.persons.empty()) {
    std::vector<std::string> folder_names;
    for (const auto& folder : folders) folder_names.push_back(folder.id);
    throw tandem::UsageError("no person has both a label in " + labels.path + " and images under " + root + " (" +
                             match.summary() + "); ids in the sheet: " + tandem::first_few(labels.ids, 3) +
                             "; folders: " + (folder_names.empty() ? "none" : tandem::first_few(folder_names, 3)));
  }
  return match;
}

std::string PersonMatch::summary(size_t shown) const {
  std::string out = count_of(persons.size(), "person", "persons") + " with " +
                    count_of(static_cast<size_t>(image_count), "image", "images");
  if (!without_folder.empty())
    out += "; " + count_of(without_folder.size(), "person", "persons") + " in the sheet without a folder (" +
           tandem::first_few(without_folder, shown) + ")";
  if (!without_images.empty())
    out += "; " + count_of(without_images.size(), "person", "persons") + " with a folder but no images (" +
           tandem::first_few(without_images, shown) + ")";
  if (!without_label.empty())
    out += "; " + count_of(without_label.size(), "folder", "folders") + " not in the sheet (" +
           tandem::first_few(without_label, shown) + ")";
  return out;
}

void limit_images_per_person(std::vector<Person>& persons, int64_t max_per_person, uint64_t seed) {
  if (max_per_person <= 0) return;
  for (Person& person : persons) {
    if (static_cast<int64_t>(person.images.size()) <= max_per_person) continue;
    tandem::SplitMix64 rng(tandem::mix_seed(seed, tandem::fnv1a64(person.id)));
    tandem::shuffle(person.images, rng);
    person.images.resize(static_cast<size_t>(max_per_person));
    std::sort(person.images.begin(), person.images.end());
  }
}

}  // namespace carotid
