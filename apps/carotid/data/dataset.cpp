#include "data/dataset.h"

#include <filesystem>
#include <map>

#include "tandem/config/config.h"
#include "tandem/error.h"

namespace carotid {
namespace fs = std::filesystem;
using tandem::UsageError;

DataKeys data_settings(const tandem::Config& config) {
  const DataKeys s = tandem::read_keys<DataKeys>(config);
  if (s.root.empty()) throw UsageError("data.root is not set: give the folder of person folders (--root-dir DIR)");
  if (s.label_file.empty())
    throw UsageError("data.label_file is not set: give the label sheet (--label-excel label.xlsx)");
  check_ratios(s.ratios);
  return s;
}

uint64_t data_seed(const DataKeys& s, uint64_t train_seed) {
  return s.seed >= 0 ? static_cast<uint64_t>(s.seed) : train_seed;
}

std::vector<int64_t> Dataset::persons_in(Part part) const {
  std::vector<int64_t> out;
  for (size_t i = 0; i < parts.size(); ++i)
    if (parts[i] == part) out.push_back(static_cast<int64_t>(i));
  return out;
}

std::vector<std::string> Dataset::describe() const {
  std::vector<std::string> lines;
  for (Part part : {Part::train, Part::val, Part::test}) {
    int64_t images = 0;
    std::vector<int64_t> per_class(num_classes(), 0);
    const auto members = persons_in(part);
    for (int64_t i : members) {
      images += static_cast<int64_t>(persons()[i].images.size());
      ++per_class[persons()[i].label];
    }
    std::string classes;
    for (int64_t k = 0; k < num_classes(); ++k)
      classes += (k ? ", " : "") + sheet.class_names[k] + " " + std::to_string(per_class[k]);
    lines.push_back(std::string(part_name(part)) + ": " + std::to_string(members.size()) + " persons (" + classes +
                    "), " + std::to_string(images) + " images");
  }
  return lines;
}

Dataset read_dataset(const DataKeys& s, uint64_t seed) {
  Dataset d;
  d.sheet = read_label_sheet(s.label_file, s.sheet);
  if (d.num_classes() < 2)
    throw UsageError(s.label_file + ": every person has the label " + d.sheet.class_names.at(0) +
                     "; a classifier needs at least two classes");
  d.match = match_persons(d.sheet, scan_person_folders(s.root, "data.root"), s.root);
  limit_images_per_person(d.match.persons, s.max_per_person, seed);
  return d;
}

Dataset load_dataset(const DataKeys& s, uint64_t seed, const std::string& reuse_split) {
  Dataset d = read_dataset(s, seed);
  if (reuse_split.empty()) {
    d.parts = split_persons(d.match.persons, s.ratios, seed);
  } else {
    if (!fs::is_regular_file(reuse_split))
      throw UsageError(reuse_split + ": no such file (the split of the run whose model.load is given)");
    d.parts = parts_from_split(read_split_csv(reuse_split), reuse_split, d.match);
  }
  const std::string how =
      reuse_split.empty() ? "data.train_ratio and data.val_ratio (" + std::to_string(d.persons().size()) + " persons)"
                          : reuse_split;
  if (d.persons_in(Part::train).empty()) throw UsageError("no person for training: check " + how);
  if (d.persons_in(Part::val).empty()) throw UsageError("no person for validation: check " + how);
  return d;
}

}  // namespace carotid
