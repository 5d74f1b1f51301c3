#pragma once
// The order that makes batches pad little: items 0 .. n-1 by length, longest
// first, ties in index order (so the order is the same on every rank and
// run). A run of it cut into batches holds items of about one length. The
// sampler's grouped steps, evaluation's shares and generation's prompts use
// it; items to go last are given lengths below every other's.
#include <algorithm>
#include <cstdint>
#include <numeric>
#include <vector>

namespace tandem {

template <class Length>
std::vector<int64_t> longest_first(int64_t n, Length length) {
  std::vector<int64_t> order(static_cast<size_t>(n));
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return length(a) > length(b); });
  return order;
}

}  // namespace tandem
