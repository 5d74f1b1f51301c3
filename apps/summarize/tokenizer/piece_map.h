#pragma once
// A hash map from byte strings to short lists of token ids, in flat arrays: the
// encoder looks up every piece of text, and a node-based map spent most of its
// time waiting for memory.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace summarize {

uint64_t piece_hash(std::string_view piece);

class PieceMap {
 public:
  explicit PieceMap(size_t max_entries) : max_entries_(max_entries) {}

  // Appends the ids stored for `piece` (hash: piece_hash(piece)) to `out`, or returns false.
  bool find(std::string_view piece, uint64_t hash, std::vector<int64_t>& out) const;
  // Stores ids for `piece` unless it is there already (another thread may have
  // been first); false, storing nothing, when max_entries are there.
  bool insert(std::string_view piece, uint64_t hash, const int64_t* ids, size_t count);
  void clear();

 private:
  // Most pieces are at most 8 bytes and one token: their slot holds all of it,
  // and a lookup touches one cache line.
  struct Slot {
    uint64_t head;  // the first 8 bytes of the key, zero-padded
    uint32_t hash;
    uint32_t tail;      // offset in tails_ of the key's bytes after 8
    uint32_t ids;       // the id where ids_count is 1, else an offset in ids_
    uint16_t key_size;  // 0: empty
    uint16_t ids_count;
  };
  // The slot holding `piece`, else the empty one where it would go.
  size_t slot_for(std::string_view piece, uint32_t hash, uint64_t head) const;
  void grow();

  size_t max_entries_, entries_ = 0;
  std::vector<Slot> slots_;  // a power of two of them, or none
  std::string tails_;
  std::vector<int32_t> ids_;
};

}  // namespace summarize
