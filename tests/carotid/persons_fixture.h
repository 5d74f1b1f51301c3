#pragma once
// Labelled persons for the split and fold tests.
#include <cstdio>
#include <string>
#include <vector>

#include "data/person_folders.h"

namespace carotid::testing {

// `negatives` persons of class 0 and `positives` of class 1, ids P000..., each
// with one to three images named after the person.
inline std::vector<Person> make_persons(int negatives, int positives) {
  std::vector<Person> persons;
  for (int i = 0; i < negatives + positives; ++i) {
    Person person;
    char id[16];
    std::snprintf(id, sizeof id, "P%03d", i);
    person.id = id;
    person.label = i < negatives ? 0 : 1;
    person.row = i + 2;
    for (int k = 0; k <= i % 3; ++k) person.images.push_back(person.id + "/" + std::to_string(k) + ".png");
    persons.push_back(person);
  }
  return persons;
}

}  // namespace carotid::testing
