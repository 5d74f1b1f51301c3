#pragma once
// Text continuation with a GPT-2: many prompts in one batch, a KV cache, and
// greedy choice or sampling (temperature, top-k, nucleus).
#include <cstdint>
#include <optional>
#include <vector>

#include "model/gpt2.h"
#include "tandem/train/precision.h"

namespace summarize {

struct GenerateOptions {
  int64_t max_new_tokens = 64;
  bool sample = false;  // false: the likeliest token (greedy); true: draw one
  double temperature = 1.0;
  int64_t top_k = 0;          // draw from the k likeliest tokens only; 0: from all
  double top_p = 1.0;         // from the likeliest tokens that make up p of the probability; 1: from all
  int64_t eot_token = 50256;  // <|endoftext|>: ends a row, not returned
  uint64_t seed = 0;          // draws depend on this, the model and the batch only
  // The forward passes run under autocast in this precision on a GPU (the
  // run's train.precision, inference_setup); fp32 changes nothing.
  tandem::Precision precision = tandem::Precision::FP32;
  // Rows that have ended leave the batch (with their cache rows) when the
  // host next looks, so the others compute on fewer rows. Unset: on a GPU
  // only, since on the CPU a smaller batch can take another GEMM path and
  // round otherwise, and the CPU's tokens stay what they always were.
  std::optional<bool> drop_finished;

  // Throws UsageError naming the first field out of range.
  void validate() const;
};

// The tokens that follow each prompt, eot excluded: at most max_new_tokens,
// fewer where the row produced eot. Prompts are left-padded to one length;
// the padding is masked out and each row's positions start at its first
// token, so a greedy row's tokens do not depend on the rows beside it (up to
// float rounding). Tokens stay on the device: the host looks at which rows
// have ended every few steps, through a copy of a fixed step (so rows leave
// the batch at the same steps, and greedy tokens repeat, on every run), and reads
// the tokens once at the end. A prompt longer than block_size - max_new_tokens keeps its
// last block_size - max_new_tokens tokens; an empty prompt starts from eot,
// GPT-2's start of text. Runs in eval mode without gradients and gives the
// model its mode back.
std::vector<std::vector<int64_t>> generate(GPT& model, const std::vector<std::vector<int64_t>>& prompts,
                                           const GenerateOptions& options = {});

// The next token of each row, [B] on the logits' device, from last-position
// logits [B,V]: greedy, or one draw from softmax(logits / temperature) kept
// to the top_k likeliest tokens and then to the smallest set of the likeliest
// whose probability reaches top_p (the likeliest always stays), renormalised.
// The whole choice runs where the logits are, so a GPU never sends [B, 50257]
// logits to the host to be sorted there.
at::Tensor next_tokens(const at::Tensor& logits, const GenerateOptions& options, at::Generator& generator);

// The generator draws are made with on `device`, from `seed` alone: on the
// CPU the same draws as ever; a GPU draws its own (a seed gives the same draws
// on a given kind of device, not across kinds).
at::Generator generator_for(const at::Device& device, uint64_t seed);

// Each row of `tokens` (CPU int64 [B, steps]) up to its first eot_token,
// which is left out.
std::vector<std::vector<int64_t>> tokens_until(const at::Tensor& tokens, int64_t eot_token);

}  // namespace summarize
