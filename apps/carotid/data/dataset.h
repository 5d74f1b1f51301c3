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
#include "tandem/config/settings.h"

namespace carotid {

// The data.* keys that say which persons a run sees, each declared once
// (tandem/config/settings.h).
struct DataKeys {
  std::string root;
  std::string label_file;
  LabelSheetOptions sheet;
  int64_t max_per_person = 1000;
  SplitRatios ratios;
  int64_t seed = -1;  // data.seed; -1: the run's train.seed

  template <class Self, class Visit>
  static void each_key(Self& k, Visit&& visit) {
    using tandem::any;
    using tandem::at_least;
    visit("data.root", k.root, "folder with one sub-folder of images per person", any());
    visit("data.label_file", k.label_file, "label sheet: .xlsx (or .csv) with a person and a label column", any());
    visit("data.label_sheet", k.sheet.sheet, ".xlsx sheet to read; empty: the first", any());
    visit("data.id_column", k.sheet.id_column, "header of the person column; empty: the first column", any());
    visit("data.label_column", k.sheet.label_column, "header of the label column; empty: the first other column",
          any());
    visit("data.max_imgs_per_person", k.max_per_person,
          "at most this many images per person, a seeded random subset; 0: all", at_least(0));
    visit("data.train_ratio", k.ratios.train, "share of each class's persons for training; the three ratios sum to 1",
          at_least(0));
    visit("data.val_ratio", k.ratios.val, "share of each class's persons for validation", at_least(0));
    visit("data.test_ratio", k.ratios.test, "share of each class's persons for the final test", at_least(0));
    visit("data.seed", k.seed,
          "seed of the person split, the cross-validation folds and the per-person image subsets; -1: train.seed. "
          "Set it to keep the same persons in each part while train.seed changes the weights and batches",
          at_least(-1));
  }
};

// The seed of the split, the folds and the image subsets: data.seed, else
// the run's shared train seed (tandem::shared_seed of train.seed).
uint64_t data_seed(const DataKeys& settings, uint64_t train_seed);

// The data.* keys, checked: root and label file given, ratios that sum to 1
// (UsageError naming the keys).
DataKeys data_settings(const tandem::Config& config);

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
Dataset read_dataset(const DataKeys& settings, uint64_t seed);

// read_dataset, then splits: by `reuse_split` (a split.csv) when
// given, else stratified from `seed`. Every fault is a UsageError naming the
// file, key or row. A split that leaves train or val without persons is one
// too, since the run could neither learn nor pick its best model.
Dataset load_dataset(const DataKeys& settings, uint64_t seed, const std::string& reuse_split = "");

}  // namespace carotid
