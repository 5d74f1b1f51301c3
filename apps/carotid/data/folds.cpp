#include "data/folds.h"

#include <algorithm>
#include <map>
#include <string>

#include "tandem/error.h"
#include "tandem/random.h"

namespace carotid {

std::vector<int64_t> assign_folds(const std::vector<Person>& persons, int64_t k, uint64_t seed) {
  if (k < 2) throw tandem::UsageError("cv.folds must be at least 2, got " + std::to_string(k));
  if (k > static_cast<int64_t>(persons.size()))
    throw tandem::UsageError("cv.folds = " + std::to_string(k) + " is more than the " +
                             std::to_string(persons.size()) + " persons with labels and images");
  std::map<int64_t, std::vector<size_t>> by_class;
  for (size_t i = 0; i < persons.size(); ++i) by_class[persons[i].label].push_back(i);
  std::vector<int64_t> folds(persons.size(), 0);
  int64_t next = 0;
  for (auto& [label, members] : by_class) {
    std::sort(members.begin(), members.end(), [&](size_t a, size_t b) { return persons[a].id < persons[b].id; });
    tandem::SplitMix64 rng(tandem::mix_seed(seed, static_cast<uint64_t>(label)));
    tandem::shuffle(members, rng);
    for (const size_t i : members) folds[i] = next++ % k;
  }
  return folds;
}

std::vector<Part> fold_parts(const std::vector<Person>& persons, const std::vector<int64_t>& folds, int64_t fold,
                             double val_share, uint64_t seed) {
  std::vector<Person> rest;
  std::vector<size_t> where;
  std::vector<Part> parts(persons.size(), Part::test);
  for (size_t i = 0; i < persons.size(); ++i) {
    if (folds.at(i) == fold) continue;
    rest.push_back(persons[i]);
    where.push_back(i);
  }
  const auto inner = split_persons(rest, {1.0 - val_share, val_share, 0.0}, tandem::mix_seed(seed, 1000 + fold));
  for (size_t j = 0; j < rest.size(); ++j) parts[where[j]] = inner[j];
  return parts;
}

}  // namespace carotid
