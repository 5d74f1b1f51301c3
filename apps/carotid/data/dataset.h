#pragma once
// The persons a run learns from and is judged on: the label sheet matched to
// the image folders, each person's image subset, and each person's part
// (train, val or test), either drawn now or read back from an earlier run's
// split.csv so that a continued run keeps its test persons unseen.
#include <cstdint>
#include <string>
#include <vector>

#include "data/person_folders.h"
#include "data/split.h"
#include "labels/label_sheet.h"

namespace tandem {
class Config;
}  // namespace tandem

namespace carotid {

struct DataSettings {
  std::string root;
  std::string label_file;
  LabelSheetOptions sheet;
  int64_t max_per_person = 0;
  SplitRatios ratios;
  int64_t seed = -1;  // data.seed; -1: the run's train.seed
};

// The seed of the split, the folds and the image subsets: data.seed, else
// the run's shared train seed (tandem::shared_seed of train.seed).
uint64_t data_seed(const DataSettings& settings, uint64_t train_seed);

// The data.* keys, checked: root and label file given, ratios that sum to 1
// (UsageError naming the keys).
DataSettings data_settings(const tandem::Config& config);

struct Dataset {
  LabelSheet sheet;
  PersonMatch match;        // match.persons: everyone with a label and images
  std::vector<Part> parts;  // parallel to match.persons; empty from read_dataset
  int64_t num_classes() const { return sheet.num_classes(); }
  const std::vector<Person>& persons() const { return match.persons; }
  // Indices into persons() of one part, in sheet order.
  std::vector<int64_t> persons_in(Part part) const;
  // One log line per part: persons and images, persons per class.
  std::vector<std::string> describe() const;
};

// Reads the sheet and the folders and keeps at most max_per_person images per
// person (drawn from `seed`); no split (cross-validation deals its own folds).
// Every fault is a UsageError naming the file, key or row.
Dataset read_dataset(const DataSettings& settings, uint64_t seed);

// read_dataset, then splits: by `reuse_split` (a split.csv) when
// given, else stratified from `seed`. Every fault is a UsageError naming the
// file, key or row. A split that leaves train or val without persons is one
// too, since the run could neither learn nor pick its best model.
Dataset load_dataset(const DataSettings& settings, uint64_t seed, const std::string& reuse_split = "");

}  // namespace carotid
