#pragma once
// What the multi-rank tests expect a reduction over the ranks to give.
#include <cstdint>

namespace tandem::testing {

// 1 + 2 + ... + size: what (rank + 1) sums to over the ranks.
inline int64_t triangle(int size) { return static_cast<int64_t>(size) * (size + 1) / 2; }

}  // namespace tandem::testing
