#pragma once
// One dialogue and its summary (empty for test rows), as the competition's
// train.csv / test.csv hold them.
#include <string>
#include <vector>

namespace summarize {

struct Example {
  std::string id;
  std::string dialogue;
  std::string summary;
};

struct Corpus {
  std::vector<Example> train, val, test;
  std::string origin;  // "built-in demo" or the train file's path
};

}  // namespace summarize
