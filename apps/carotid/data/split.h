#pragma once
// Train, validation and test sets made of persons, never of images: two
// images of one person in different sets would let a model be tested on
// someone it has seen. Each class is split on its own (stratified), so that
// every set holds the classes in the proportions of the whole, which matters
// when one class is rare (60 malignant of 214 in the demo data).
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "data/person_folders.h"

namespace carotid {

enum class Part : int { train = 0, val = 1, test = 2, none = 3 };

// "train", "val", "test", "none".
const char* part_name(Part part);

struct SplitRatios {
  double train = 0.7;
  double val = 0.15;
  double test = 0.15;
};

// Throws tandem::UsageError naming data.train_ratio, data.val_ratio and
// data.test_ratio when a ratio is negative or not finite, or when they do
// not sum to 1 within 1e-6.
void check_ratios(const SplitRatios& ratios);

// How many of `n` persons of one class go to train, val and test. The cut is
// made on the cumulative sums: train = round(n * r_train), train + val =
// round(n * (r_train + r_val)), test takes the rest; halves round up (a
// 1e-9 margin absorbs binary fractions, so 5 * 0.7 = 3.4999999999999996
// counts as 3.5). Each count is then within one person of n times its ratio,
// exact when n times each ratio is whole, and the three always sum to n.
std::array<int64_t, 3> split_counts(int64_t n, const SplitRatios& ratios);

// The part of each person (parallel to `persons`). Within each class the
// persons are sorted by id, shuffled with splitmix64 and Fisher-Yates from
// `seed` and the class, and cut by split_counts. The result depends only on
// the persons' ids and labels, the ratios and the seed: not on the order of
// `persons`, the platform or the standard library. Calls check_ratios.
std::vector<Part> split_persons(const std::vector<Person>& persons, const SplitRatios& ratios, uint64_t seed);

// split.csv, written into the run directory: one row per person,
// `person,label,split,images` (images = how many of the person's images the
// run used), so a later run (--load-model) evaluates on the same persons and
// a reader can check the split by eye. Persons with Part::none are left out.
void write_split_csv(const std::string& path, const std::vector<Person>& persons, const std::vector<Part>& parts);

struct SplitRow {
  std::string person;
  int64_t label = 0;
  Part part = Part::none;
  int64_t images = 0;
  int64_t line = 0;  // in the file, for messages
};

// Reads a file write_split_csv wrote. Throws tandem::UsageError naming the
// file and line for a missing file or column, a split other than
// train/val/test, a label or image count that is not a whole number >= 0, or
// a person listed twice.
std::vector<SplitRow> read_split_csv(const std::string& path);

// The part of each of match.persons from a split read back: persons the file
// does not list get Part::none (the app leaves them out and logs how many).
// Throws tandem::UsageError naming `path` and the line when a person in the
// file has no folder, no images, or no label in the sheet, or when the file's
// label differs from the sheet's: a model must be tested on the persons it
// was tested on before, with the labels it was tested against.
std::vector<Part> parts_from_split(const std::vector<SplitRow>& rows, const std::string& path,
                                   const PersonMatch& match);

}  // namespace carotid
