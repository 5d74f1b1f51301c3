#pragma once
// Person-level K-fold cross-validation: every person is tested exactly once,
// by the model of the fold that left them out, so a few hundred persons give
// a figure for every one of them instead of for the 15 % a single split
// holds out. Folds are made of persons, never images, and stratified by
// class, for the reasons data/split.h gives.
#include <cstdint>
#include <vector>

#include "data/person_folders.h"
#include "data/split.h"

namespace carotid {

// The fold (0..k-1) of each person (parallel to `persons`). Within each class,
// in label order, the persons are sorted by id and shuffled from `seed` and
// the class as split_persons does, then dealt round-robin, each class
// continuing where the last one stopped: every fold holds within one person
// of n/k persons overall and of n_c/k of each class. Depends only on the
// persons' ids and labels, k and the seed (so not on the number of ranks).
// Throws tandem::UsageError naming cv.folds when k < 2 or k exceeds the persons.
std::vector<int64_t> assign_folds(const std::vector<Person>& persons, int64_t k, uint64_t seed);

// The parts of fold `fold`'s run: its persons are the test set; the others are
// split stratified into train and val, val taking `val_share` of each class
// (drawn from the seed and the fold), so the model is picked without seeing
// the persons it is judged on.
std::vector<Part> fold_parts(const std::vector<Person>& persons, const std::vector<int64_t>& folds, int64_t fold,
                             double val_share, uint64_t seed);

}  // namespace carotid
