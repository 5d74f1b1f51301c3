#pragma once
// What the benches' flags share: comma-separated lists ("tiny,gpt2", "1,8")
// and "--flag value" pairs.
#include <cstdio>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

namespace bench {

inline std::vector<std::string> split(const std::string& list) {
  std::vector<std::string> items;
  std::stringstream in(list);
  for (std::string item; std::getline(in, item, ',');)
    if (!item.empty()) items.push_back(item);
  return items;
}

// Hands each "--flag value" pair to take(), which returns false for a flag it
// does not know. Returns 0, or 2 (bad input) once stderr says why: a trailing
// flag without its value is refused rather than dropped, so that a bench never
// runs for minutes on defaults the user meant to override.
inline int parse_flags(int argc, char** argv, const char* program,
                       const std::function<bool(const std::string& key, const char* value)>& take) {
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!take(argv[i], argv[i + 1])) {
      std::fprintf(stderr, "%s: unknown flag %s\n", program, argv[i]);
      return 2;
    }
  }
  if ((argc - 1) % 2 != 0) {
    std::fprintf(stderr, "%s: flag %s has no value\n", program, argv[argc - 1]);
    return 2;
  }
  return 0;
}

}  // namespace bench
