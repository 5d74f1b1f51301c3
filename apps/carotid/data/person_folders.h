#pragma once
// The images of each person: the data root holds one folder per person,
// named by the person's id, with that person's images anywhere inside it
// (sub-folders per visit or per side are fine). Folders and sheet rows are
// matched here, and what does not match is counted and named for the log,
// since a typo in a folder name silently shrinks a medical data set.
#include <cstdint>
#include <string>
#include <vector>

#include "labels/label_sheet.h"

namespace carotid {

// .png, .jpg, .jpeg, .bmp in any letter case.
bool is_image_file(const std::string& path);

struct PersonFolder {
  std::string id;                   // the folder's name
  std::string dir;                  // its path
  std::vector<std::string> images;  // every image below it, sorted by path (byte order)
};

// The person folders directly under `root`, sorted by name; hidden entries
// (".git", ".DS_Store") and plain files in `root` itself (label.xlsx) are left
// out. Symbolic links to folders are followed at the top level only, so a
// link cycle inside a person's folder cannot loop. Throws tandem::UsageError
// naming `root` and `root_key` when it is missing or not a folder.
std::vector<PersonFolder> scan_person_folders(const std::string& root, const std::string& root_key = "data.root");

struct Person {
  std::string id;
  int64_t label = 0;
  std::vector<std::string> images;
  int64_t row = 0;  // where the sheet gives the label, for messages
};

struct PersonMatch {
  std::vector<Person> persons;              // in sheet order; each with at least one image
  std::vector<std::string> without_folder;  // in the sheet, no folder (sheet order)
  std::vector<std::string> without_label;   // a folder, not in the sheet (name order)
  std::vector<std::string> without_images;  // in the sheet, a folder with no image in it
  int64_t image_count = 0;                  // over `persons`

  // One line for the log: counts, and the first `shown` ids of each list.
  std::string summary(size_t shown = 5) const;
};

// Pairs sheet rows with folders by id: the folder named exactly as the id,
// or, for an id of digits, the one folder whose name is the same number
// written with leading zeros (a sheet saved by Excel turns "007" into 7).
// Throws tandem::UsageError, with summary()'s counts and examples of both
// sides' names, when no person has both a label and an image.
PersonMatch match_persons(const LabelSheet& labels, const std::vector<PersonFolder>& folders, const std::string& root);

// Keeps at most `max_per_person` images of each person (all when it is 0 or
// less): a uniform random subset drawn with splitmix64 and Fisher-Yates from
// `seed` and the person's id, so the same on every platform and, for one
// person, whatever other persons there are. The kept images stay sorted.
void limit_images_per_person(std::vector<Person>& persons, int64_t max_per_person, uint64_t seed);

}  // namespace carotid
