#pragma once
// Values as messages write them: numbers as a stream prints them, shapes as
// torch prints sizes, the first few items of a list too long to show, and
// names upper-cased (a flag's type in --help, a GPU's name matched without case).
#include <cctype>
#include <cstddef>
#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

namespace tandem {

// "600", "0.1", "3e-05" (%g).
inline std::string number_text(double value) {
  std::ostringstream out;
  out << value;
  return out.str();
}

// "[3,4]": of a tensor (t.sizes()), a file's header or a std::vector<int64_t>.
template <class Sizes>
std::string shape_text(const Sizes& sizes) {
  std::string out = "[";
  for (const auto size : sizes) out += (out.size() > 1 ? "," : "") + std::to_string(static_cast<int64_t>(size));
  return out + "]";
}

// "a, b, c ... (12 more)": the first `shown` items and how many were left
// out. `before_more` goes between the last item shown and the count.
inline std::string first_few(const std::vector<std::string>& items, size_t shown = 5,
                             const std::string& before_more = " ... ") {
  std::string out;
  for (size_t i = 0; i < items.size() && i < shown; ++i) out += (i ? ", " : "") + items[i];
  if (items.size() > shown) out += before_more + "(" + std::to_string(items.size() - shown) + " more)";
  return out;
}

// "NVIDIA H100": ASCII letters upper-cased, the rest as it was.
inline std::string upper_text(std::string text) {
  for (char& c : text) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return text;
}

}  // namespace tandem
