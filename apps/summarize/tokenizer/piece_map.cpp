#include "tokenizer/piece_map.h"

#include <algorithm>
#include <cstring>
#include <limits>

#include "tandem/random.h"

namespace summarize {
namespace {

uint32_t fold(uint64_t hash) { return uint32_t(hash ^ hash >> 32); }

uint64_t head_of(std::string_view piece) {
  uint64_t head = 0;
  std::memcpy(&head, piece.data(), std::min<size_t>(piece.size(), sizeof head));
  return head;
}

}  // namespace

uint64_t piece_hash(std::string_view piece) { return tandem::fnv1a64(piece); }  // pieces are a few bytes long

size_t PieceMap::slot_for(std::string_view piece, uint32_t hash, uint64_t head) const {
  const size_t mask = slots_.size() - 1;
  for (size_t i = hash & mask;; i = (i + 1) & mask) {
    const Slot& slot = slots_[i];
    if (slot.key_size == 0) return i;
    if (slot.hash == hash && slot.head == head && slot.key_size == piece.size() &&
        (piece.size() <= 8 || std::memcmp(tails_.data() + slot.tail, piece.data() + 8, piece.size() - 8) == 0))
      return i;
  }
}

bool PieceMap::find(std::string_view piece, uint64_t hash, std::vector<int64_t>& out) const {
  if (slots_.empty()) return false;
  const Slot& slot = slots_[slot_for(piece, fold(hash), head_of(piece))];
  if (slot.key_size == 0) return false;
  if (slot.ids_count == 1)
    out.push_back(slot.ids);
  else
    out.insert(out.end(), ids_.begin() + slot.ids, ids_.begin() + slot.ids + slot.ids_count);
  return true;
}

bool PieceMap::insert(std::string_view piece, uint64_t hash, const int64_t* ids, size_t count) {
  constexpr size_t kMaxSize = std::numeric_limits<uint16_t>::max();
  if (entries_ >= max_entries_ || piece.empty() || piece.size() > kMaxSize || count == 0 || count > kMaxSize)
    return false;
  if (2 * (entries_ + 1) > slots_.size()) grow();  // at most half full: short probes
  const uint64_t head = head_of(piece);
  Slot& slot = slots_[slot_for(piece, fold(hash), head)];
  if (slot.key_size != 0) return true;
  slot = {head,
          fold(hash),
          uint32_t(tails_.size()),
          count == 1 ? uint32_t(ids[0]) : uint32_t(ids_.size()),
          uint16_t(piece.size()),
          uint16_t(count)};
  if (piece.size() > 8) tails_.append(piece.substr(8));
  if (count > 1) ids_.insert(ids_.end(), ids, ids + count);
  ++entries_;
  return true;
}

// Slots grow with the entries rather than up front: a sparse table would spread
// a few hot pieces over many cache lines.
void PieceMap::grow() {
  std::vector<Slot> old(std::max<size_t>(16, 2 * slots_.size()), Slot{});
  old.swap(slots_);
  const size_t mask = slots_.size() - 1;
  for (const Slot& slot : old) {
    if (slot.key_size == 0) continue;
    size_t i = slot.hash & mask;
    while (slots_[i].key_size != 0) i = (i + 1) & mask;
    slots_[i] = slot;
  }
}

void PieceMap::clear() {
  slots_.clear();
  tails_.clear();
  ids_.clear();
  entries_ = 0;
}

}  // namespace summarize
