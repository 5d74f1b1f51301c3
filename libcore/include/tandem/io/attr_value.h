#pragma once
// The values HDF5 attributes and checkpoint state hold: the three kinds that map
// one-to-one onto Python (int, float, str) when a file is opened in h5py.
#include <cstdint>
#include <string>
#include <variant>

namespace tandem {

using AttrValue = std::variant<int64_t, double, std::string>;

}  // namespace tandem
