#pragma once
// Shapes in messages, written as "[3,4]" like torch's sizes: of a tensor
// (t.sizes()), a file's header or a std::vector<int64_t>.
#include <cstdint>
#include <string>

namespace tandem {

template <class Sizes>
std::string shape_text(const Sizes& sizes) {
  std::string out = "[";
  for (const auto size : sizes) out += (out.size() > 1 ? "," : "") + std::to_string(static_cast<int64_t>(size));
  return out + "]";
}

}  // namespace tandem
