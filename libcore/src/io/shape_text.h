#pragma once
// Private to io/: shapes in messages, written as "[3,4]" like torch's sizes.
#include <cstdint>
#include <string>

namespace tandem::io {

template <class Sizes>
std::string shape_text(const Sizes& sizes) {
  std::string out = "[";
  for (const auto size : sizes) out += (out.size() > 1 ? "," : "") + std::to_string(static_cast<int64_t>(size));
  return out + "]";
}

}  // namespace tandem::io
