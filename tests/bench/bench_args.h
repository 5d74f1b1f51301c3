#pragma once
// What the benches' flags share: comma-separated lists ("tiny,gpt2", "1,8").
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

}  // namespace bench
