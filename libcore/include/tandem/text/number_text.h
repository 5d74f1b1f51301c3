#pragma once
// Numbers in messages as a stream prints them (%g): "600", "0.1", "3e-05".
#include <sstream>
#include <string>

namespace tandem {

inline std::string number_text(double value) {
  std::ostringstream out;
  out << value;
  return out.str();
}

}  // namespace tandem
