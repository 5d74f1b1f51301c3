#pragma once
// GPT-2's byte-level BPE vocabulary as read from disk: tiktoken's gpt2.tiktoken
// (ranks; the merges are recovered from them), OpenAI's encoder.json +
// vocab.bpe, or the same data as Hugging Face names it, vocab.json + merges.txt.
#include <cstdint>
#include <string>
#include <vector>

namespace summarize {

struct BpeMerge {
  int32_t left, right, result;  // token ids
};

struct BpeVocab {
  std::vector<std::string> tokens;  // id -> the raw bytes it stands for
  std::vector<BpeMerge> merges;     // in rank order: index 0 is applied first
  int32_t byte_ids[256];            // the token of each single byte
  int32_t eot;                      // <|endoftext|>
};

// Throws tandem::UsageError naming `dir`, the file at fault and the files expected.
BpeVocab read_bpe_vocab(const std::string& dir);

}  // namespace summarize
