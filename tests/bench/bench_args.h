#pragma once
// What the benches' flags share: comma-separated lists ("tiny,gpt2", "1,8")
// and "--flag value" pairs.
#include <cstdio>
#include <functional>
#include <optional>
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
// does not know. nullopt: go on and run. Otherwise the status to exit with:
// 0 after -h/--help printed `usage`, or 2 (bad input) once stderr says why: a
// trailing flag without its value is refused rather than dropped, so that a
// bench never runs for minutes on defaults the user meant to override.
inline std::optional<int> parse_flags(int argc, char** argv, const char* program, const char* usage,
                                      const std::function<bool(const std::string& key, const char* value)>& take) {
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "-h" || arg == "--help") {
      std::printf("usage: %s %s\n", program, usage);
      return 0;
    }
  }
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!take(argv[i], argv[i + 1])) {
      std::fprintf(stderr, "%s: unknown flag %s\nusage: %s %s\n", program, argv[i], program, usage);
      return 2;
    }
  }
  if ((argc - 1) % 2 != 0) {
    std::fprintf(stderr, "%s: flag %s has no value\n", program, argv[argc - 1]);
    return 2;
  }
  return std::nullopt;
}

}  // namespace bench
