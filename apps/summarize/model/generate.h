#pragma once
// Text continuation with a GPT-2: many prompts in one batch, a KV cache, and
// greedy choice or sampling (temperature, top-k, nucleus).
#include <cstdint>
#include <vector>

#include "model/gpt2.h"

namespace summarize {

struct GenerateOptions {
  int64_t max_new_tokens = 64;
  bool sample = false;  // false: the likeliest token (greedy); true: draw one
  double temperature = 1.0;
  int64_t top_k = 0;          // draw from the k likeliest tokens only; 0: from all
  double top_p = 1.0;         // from the likeliest tokens that make up p of the probability; 1: from all
  int64_t eot_token = 50256;  // <|endoftext|>: ends a row, not returned
  uint64_t seed = 0;          // draws depend on this, the model and the batch only

  // Throws UsageError naming the first field out of range.
  void validate() const;
};

// The tokens that follow each prompt, eot excluded: at most max_new_tokens,
// fewer where the row produced eot. Prompts are left-padded to one length;
// the padding is masked out and each row's positions start at its first
// token, so a greedy row's tokens do not depend on the rows beside it (up to
// float rounding). A prompt longer than block_size - max_new_tokens keeps its
// last block_size - max_new_tokens tokens; an empty prompt starts from eot,
// GPT-2's start of text. Runs in eval mode without gradients and gives the
// model its mode back.
std::vector<std::vector<int64_t>> generate(GPT& model, const std::vector<std::vector<int64_t>>& prompts,
                                           const GenerateOptions& options = {});

// One step of a batch: appends tokens[b] (CPU int64 [batch]) to out[b] for
// each row not yet done, and marks a row done when its token is eot (which
// is not appended). Returns how many rows are still running.
int64_t append_step(const at::Tensor& tokens, int64_t eot_token, std::vector<std::vector<int64_t>>& out,
                    std::vector<bool>& done);

}  // namespace summarize
