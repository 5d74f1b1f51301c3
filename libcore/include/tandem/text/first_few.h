#pragma once
#include <cstddef>
#include <string>
#include <vector>

namespace tandem {

// "a, b, c ... (12 more)": the first `shown` items of a list that may be too
// long for a message, and how many were left out. `before_more` goes between
// the last item shown and the count.
inline std::string first_few(const std::vector<std::string>& items, size_t shown = 5,
                             const std::string& before_more = " ... ") {
  std::string out;
  for (size_t i = 0; i < items.size() && i < shown; ++i) out += (i ? ", " : "") + items[i];
  if (items.size() > shown) out += before_more + "(" + std::to_string(items.size() - shown) + " more)";
  return out;
}

}  // namespace tandem
