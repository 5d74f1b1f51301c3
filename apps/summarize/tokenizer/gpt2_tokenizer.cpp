#include "tokenizer/gpt2_tokenizer.h"

#include <pwd.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <limits>
#include <cstdlib>
#include <functional>
#include <mutex>
#include <queue>
#include <shared_mutex>

#include "tandem/error.h"
#include "tokenizer/bpe_vocab.h"
#include "tokenizer/piece_map.h"
#include "tokenizer/pretokenizer.h"

namespace summarize {
namespace {

constexpr std::string_view kEndOfText = "<|endoftext|>";

// (left id, right id) -> merge, by open addressing: BPE looks up every
// adjacent pair it considers.
class MergeTable {
 public:
  struct Merge {
    uint64_t key;
    int32_t rank, result;
  };

  explicit MergeTable(const std::vector<BpeMerge>& merges) {
    size_t capacity = 16;
    while (capacity < 2 * merges.size()) capacity *= 2;
    slots_.assign(capacity, Merge{kEmpty, 0, 0});
    for (size_t rank = 0; rank < merges.size(); ++rank) {
      const BpeMerge& m = merges[rank];
      Merge& slot = slots_[slot_for(key(m.left, m.right))];
      if (slot.key == kEmpty) slot = {key(m.left, m.right), int32_t(rank), m.result};
    }
  }

  const Merge* find(int32_t left, int32_t right) const {
    const Merge& slot = slots_[slot_for(key(left, right))];
    return slot.key == kEmpty ? nullptr : &slot;
  }

 private:
  static constexpr uint64_t kEmpty = ~uint64_t(0);  // ids are never negative
  static uint64_t key(int32_t left, int32_t right) { return uint64_t(uint32_t(left)) << 32 | uint32_t(right); }
  size_t slot_for(uint64_t key) const {
    const size_t mask = slots_.size() - 1;
    for (size_t i = (key * 0x9E3779B97F4A7C15ull) >> 32 & mask;; i = (i + 1) & mask)
      if (slots_[i].key == key || slots_[i].key == kEmpty) return i;
  }
  std::vector<Merge> slots_;
};

// Pieces that repeat (words) are merged once; shards keep threads from queueing
// on one lock, and a shard that fills is emptied so memory stays bounded.
class PieceCache {
 public:
  static constexpr size_t kMaxPiece = 64;  // longer pieces rarely repeat

  bool find(std::string_view piece, uint64_t hash, std::vector<int64_t>& out) const {
    const Shard& shard = shards_[hash >> 60];
    std::shared_lock lock(shard.mutex);
    return shard.map.find(piece, hash, out);
  }

  void add(std::string_view piece, uint64_t hash, const int64_t* ids, size_t count) {
    Shard& shard = shards_[hash >> 60];
    std::unique_lock lock(shard.mutex);
    if (!shard.map.insert(piece, hash, ids, count)) {
      shard.map.clear();
      shard.map.insert(piece, hash, ids, count);
    }
  }

 private:
  static constexpr size_t kShards = 16, kShardEntries = 8192;  // hash >> 60 picks the shard
  struct Shard {
    mutable std::shared_mutex mutex;
    PieceMap map{kShardEntries};
  };
  std::array<Shard, kShards> shards_;
};

}  // namespace

struct Gpt2Tokenizer::Impl {
  explicit Impl(BpeVocab vocab_in) : vocab(std::move(vocab_in)), merges(vocab.merges), whole(vocab.tokens.size()) {
    // A piece that is itself a token needs no merging when BPE would give that
    // token back, as it does for every GPT-2 token; checking each keeps the
    // shortcut exact for any vocabulary.
    std::vector<int64_t> ids;
    for (size_t id = 0; id < vocab.tokens.size(); ++id) {
      if (int32_t(id) == vocab.eot) continue;
      ids.clear();
      merge(vocab.tokens[id], ids);
      if (ids.size() == 1 && ids[0] == int64_t(id))
        whole.insert(vocab.tokens[id], piece_hash(vocab.tokens[id]), ids.data(), 1);
    }
  }

  void encode_text(std::string_view text, std::vector<int64_t>& out) const {
    for (size_t pos = 0; pos < text.size();) encode_piece(pretokenizer.next(text, pos), out);
  }

  void encode_piece(std::string_view piece, std::vector<int64_t>& out) const {
    if (piece.size() == 1) {
      out.push_back(vocab.byte_ids[uint8_t(piece[0])]);
      return;
    }
    if (piece.size() > PieceCache::kMaxPiece) {
      merge_long(piece, out);
      return;
    }
    const uint64_t hash = piece_hash(piece);
    if (whole.find(piece, hash, out) || cache.find(piece, hash, out)) return;
    const size_t first = out.size();
    merge_short(piece, out);
    cache.add(piece, hash, out.data() + first, out.size() - first);
  }

  // BPE: merges the lowest-ranked adjacent pair, leftmost first, until none is
  // left (encoder.py's order), by one of two ways that give the same tokens.
  void merge(std::string_view piece, std::vector<int64_t>& out) const {
    if (piece.size() <= PieceCache::kMaxPiece)
      merge_short(piece, out);
    else
      merge_long(piece, out);
  }

  // A word's few bytes: the symbols and the rank of each adjacent pair in
  // arrays on the stack, rescanned for the lowest rank after each merge. On a
  // cache miss (text whose words rarely repeat) this is most of the work, and
  // O(n^2) over at most 64 symbols costs less than a heap's allocations.
  void merge_short(std::string_view piece, std::vector<int64_t>& out) const {
    constexpr int32_t kNone = std::numeric_limits<int32_t>::max();
    int32_t ids[PieceCache::kMaxPiece], ranks[PieceCache::kMaxPiece], results[PieceCache::kMaxPiece];
    int32_t n = int32_t(piece.size());
    for (int32_t i = 0; i < n; ++i) ids[i] = vocab.byte_ids[uint8_t(piece[i])];
    // ranks[i], results[i]: the merge of ids[i] and ids[i + 1].
    const auto pair = [&](int32_t i) {
      const auto* m = merges.find(ids[i], ids[i + 1]);
      ranks[i] = m ? m->rank : kNone;
      results[i] = m ? m->result : 0;
    };
    for (int32_t i = 0; i + 1 < n; ++i) pair(i);
    while (n > 1) {
      int32_t best = -1, best_rank = kNone;
      for (int32_t i = 0; i + 1 < n; ++i)
        if (ranks[i] < best_rank) best_rank = ranks[best = i];
      if (best < 0) break;
      ids[best] = results[best];
      // ids[best + 1] is gone: what follows moves left by one, pairs with it.
      std::copy(ids + best + 2, ids + n, ids + best + 1);
      if (best + 2 < n - 1) {
        std::copy(ranks + best + 2, ranks + n - 1, ranks + best + 1);
        std::copy(results + best + 2, results + n - 1, results + best + 1);
      }
      --n;
      if (best > 0) pair(best - 1);
      if (best + 1 < n) pair(best);
    }
    out.insert(out.end(), ids, ids + n);
  }

  // A long piece (a run of a million letters is one): a heap of candidate
  // pairs keeps it at O(n log n) rather than the O(n^2) of rescanning.
  void merge_long(std::string_view piece, std::vector<int64_t>& out) const {
    struct Symbol {
      int32_t id, prev, next;  // id -1: merged into the symbol before it
    };
    struct Candidate {
      int32_t rank, left, right, left_id, right_id, result;
      bool operator>(const Candidate& o) const { return rank != o.rank ? rank > o.rank : left > o.left; }
    };
    const int32_t n = int32_t(piece.size());
    std::vector<Symbol> symbols(n);
    for (int32_t i = 0; i < n; ++i) symbols[i] = {vocab.byte_ids[uint8_t(piece[i])], i - 1, i + 1 < n ? i + 1 : -1};

    std::priority_queue<Candidate, std::vector<Candidate>, std::greater<Candidate>> heap;
    const auto consider = [&](int32_t left) {
      const int32_t right = symbols[left].next;
      if (right < 0) return;
      if (const auto* merge = merges.find(symbols[left].id, symbols[right].id))
        heap.push({merge->rank, left, right, symbols[left].id, symbols[right].id, merge->result});
    };
    for (int32_t i = 0; i + 1 < n; ++i) consider(i);

    while (!heap.empty()) {
      const Candidate c = heap.top();
      heap.pop();
      Symbol& left = symbols[c.left];
      Symbol& right = symbols[c.right];
      if (left.next != c.right || left.id != c.left_id || right.id != c.right_id) continue;
      left.id = c.result;
      left.next = right.next;
      if (right.next >= 0) symbols[right.next].prev = c.left;
      right.id = -1;
      if (left.prev >= 0) consider(left.prev);
      consider(c.left);
    }
    for (int32_t i = 0; i >= 0; i = symbols[i].next) out.push_back(symbols[i].id);
  }

  BpeVocab vocab;
  MergeTable merges;
  PieceMap whole;  // pieces that are one token
  Pretokenizer pretokenizer;
  mutable PieceCache cache;
};

Gpt2Tokenizer Gpt2Tokenizer::load(const std::string& dir) {
  return Gpt2Tokenizer(std::make_shared<const Impl>(read_bpe_vocab(dir)));
}

std::vector<int64_t> Gpt2Tokenizer::encode(std::string_view text, SpecialTokens special) const {
  std::vector<int64_t> out;
  out.reserve(text.size() / 3);
  if (special == SpecialTokens::kAllowed) {
    for (size_t at; (at = text.find(kEndOfText)) != std::string_view::npos;) {
      impl_->encode_text(text.substr(0, at), out);
      out.push_back(impl_->vocab.eot);
      text.remove_prefix(at + kEndOfText.size());
    }
  }
  impl_->encode_text(text, out);
  return out;
}

std::string Gpt2Tokenizer::decode(const std::vector<int64_t>& ids) const {
  const auto& tokens = impl_->vocab.tokens;
  std::string text;
  for (size_t i = 0; i < ids.size(); ++i) {
    if (ids[i] < 0 || ids[i] >= int64_t(tokens.size()))
      throw tandem::UsageError("token id " + std::to_string(ids[i]) + " at position " + std::to_string(i) +
                               " is not in GPT-2's vocabulary (0.." + std::to_string(tokens.size() - 1) + ")");
    text += tokens[ids[i]];
  }
  return text;
}

int64_t Gpt2Tokenizer::eot() const { return impl_->vocab.eot; }

int64_t Gpt2Tokenizer::vocab_size() const { return int64_t(impl_->vocab.tokens.size()); }

std::string default_tokenizer_dir() {
  const char* dir = std::getenv("TANDEM_TOKENIZER_DIR");
  if (dir && *dir) return dir;
  // The XDG spec says to ignore a relative XDG_CACHE_HOME.
  const char* cache = std::getenv("XDG_CACHE_HOME");
  if (cache && cache[0] == '/') return std::string(cache) + "/tandem/gpt2";
  const char* home = std::getenv("HOME");
  if (!home || !*home) {
    const passwd* user = getpwuid(getuid());
    if (!user || !user->pw_dir)
      throw tandem::UsageError("no home directory to hold the GPT-2 vocabulary: set TANDEM_TOKENIZER_DIR");
    home = user->pw_dir;
  }
  return std::string(home) + "/.cache/tandem/gpt2";
}

}  // namespace summarize
