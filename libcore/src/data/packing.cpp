#include "tandem/data/packing.h"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "tandem/data/longest_first.h"

namespace tandem {

std::vector<std::vector<int64_t>> pack_first_fit_decreasing(const std::vector<int64_t>& lengths, int64_t capacity) {
  for (const int64_t length : lengths)
    if (length < 1 || length > capacity)
      throw std::invalid_argument("packing: a sample of " + std::to_string(length) + " tokens for sequences of " +
                                  std::to_string(capacity));
  std::vector<std::vector<int64_t>> sequences;
  std::vector<int64_t> room;
  // A step holds hundreds of samples in tens of sequences: the plain scan
  // costs microseconds, less than a search tree's upkeep would.
  for (const int64_t i : longest_first(static_cast<int64_t>(lengths.size()), [&](int64_t k) { return lengths[k]; })) {
    size_t s = 0;
    while (s < room.size() && room[s] < lengths[i]) ++s;
    if (s == room.size()) {
      sequences.emplace_back();
      room.push_back(capacity);
    }
    sequences[s].push_back(i);
    room[s] -= lengths[i];
  }
  return sequences;
}

std::vector<std::vector<int64_t>> pack_evenly(const std::vector<int64_t>& lengths, int64_t capacity,
                                              int64_t sequences) {
  std::vector<std::vector<int64_t>> packed(static_cast<size_t>(sequences));
  std::vector<int64_t> fill(static_cast<size_t>(sequences), 0);
  for (const int64_t i : longest_first(static_cast<int64_t>(lengths.size()), [&](int64_t k) { return lengths[k]; })) {
    const auto s = static_cast<size_t>(std::min_element(fill.begin(), fill.end()) - fill.begin());
    if (fill[s] + lengths[i] > capacity) return {};
    packed[s].push_back(i);
    fill[s] += lengths[i];
  }
  std::vector<std::vector<int64_t>> kept;
  for (const int64_t s : longest_first(sequences, [&](int64_t k) { return fill[k]; }))
    if (!packed[s].empty()) kept.push_back(std::move(packed[s]));
  return kept;
}

}  // namespace tandem
