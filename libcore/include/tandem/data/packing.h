#pragma once
// Padding-free packing: a step's samples laid end to end in sequences of at
// most `capacity` tokens, so that a forward pass computes real tokens and
// little else. First-fit decreasing (samples longest first, each into the
// first sequence with room, a new one when none fits) uses at most
// 11/9 OPT + 6/9 sequences (Dósa 2007) and, on the length spreads of
// summarization data, leaves a few percent of each sequence empty. The
// packing depends on the lengths alone, in their order, so every rank
// computes the same one.
#include <cstdint>
#include <vector>

namespace tandem {

// Sequences as lists of indices into `lengths`, in the order they were
// opened (the first holds the longest sample), each sequence's samples in the
// order they were placed. Throws std::invalid_argument for a length below 1
// or above `capacity`.
std::vector<std::vector<int64_t>> pack_first_fit_decreasing(const std::vector<int64_t>& lengths, int64_t capacity);

// The same samples spread over `sequences` sequences of at most `capacity`
// tokens as evenly as it goes: longest first, each into the emptiest
// sequence (the first of equals), which balances the work of the ranks and
// micro-batches the sequences are dealt to (LPT scheduling, Graham 1969).
// Sequences left empty (fewer samples than sequences) are dropped; the rest
// come fullest first. Empty when a sample finds no sequence with room (then
// first-fit decreasing's packing stands).
std::vector<std::vector<int64_t>> pack_evenly(const std::vector<int64_t>& lengths, int64_t capacity,
                                              int64_t sequences);

}  // namespace tandem
