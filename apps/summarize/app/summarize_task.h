#pragma once
// Summarization as a Task for the shared training loop: batches of
// prompt + summary sequences, loss on the summary and its <|endoftext|> only;
// evaluation gives that loss and, optionally, the ROUGE of summaries it
// generates.
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "app/inference.h"
#include "app/prepare.h"
#include "data/tokens.h"
#include "model/gpt2.h"
#include "tandem/config/settings.h"
#include "tandem/train/task.h"

namespace summarize {

// What evaluation needs to generate summaries and score them (the key
// eval.rouge_samples).
struct RougeDuringTraining {
  std::vector<Example> examples;             // the first eval.rouge_samples validation examples
  const Gpt2Tokenizer* tokenizer = nullptr;  // outlives the task
  InferenceOptions settings;                // eval's (inference_setup's precision), greedy
  bool stemmer = false;
};

// How a step's sequences are cut into micro-batches, each declared once.
struct BatchingKeys {
  std::string batching = "packed";

  template <class Self, class Visit>
  static void each_key(Self& k, Visit&& visit) {
    visit("data.batching", k.batching,
          "how a step's sequences are cut into micro-batches: \"random\" as drawn, \"grouped\" by length "
          "(the same step, less padding), or \"packed\" end to end into sequences of model.block_size tokens, "
          "each attending to itself alone (the same step, almost no padding; train.micro_batch then counts "
          "packed sequences)",
          tandem::one_of({"random", "grouped", "packed"}));
  }
};

// The longest training row a plan must hold: its tokens, its summary tokens
// (the end token included: what the loss predicts) and the largest share of
// a row's tokens that are summary (packing fills sequences with such rows).
struct RowBounds {
  int64_t length = 0, predicted = 0;
  double share = 0;
};
RowBounds row_bounds(const TokenSet& set);

// What evaluation during training generates: greedy summaries for
// eval.rouge_samples, gen.batch prompts at a time (0: none), each of up to
// gen.max_new_tokens.
struct GenerationBounds {
  int64_t batch = 0, new_tokens = 0;
};

// What training keeps for backward on micro-batches of rows within `rows`
// (GPTConfig::activation_bytes); packed into sequences of `pack_tokens`
// when that is above 0. Evaluation: the larger of a micro-batch of such
// rows without gradients (evaluation does not pack) and `generation`, its
// prompts as long as such a row. SummarizeTask::activation_bytes,
// and the plan command's estimate before any data is read.
tandem::Activations summarize_activations(const ModelOptions& spec, const RowBounds& rows, int64_t pack_tokens,
                                          const GenerationBounds& generation, const tandem::ActivationQuery& query);

class SummarizeTask : public tandem::Task {
 public:
  // Without `rouge`, evaluation gives the loss alone.
  SummarizeTask(ModelOptions spec, TokenSet train, TokenSet val, int64_t pad,
                std::optional<RougeDuringTraining> rouge = std::nullopt, BatchingKeys batching = {});

  std::shared_ptr<torch::nn::Module> build_model() override;
  // Under LoRA, the base's weights file by its checksum (base_checksum);
  // else none.
  std::string frozen_base() const override { return frozen_base_; }
  int64_t train_size() const override { return train_.size(); }
  int64_t eval_size() const override { return val_.size(); }
  tandem::Batch make_batch(const std::vector<int64_t>& indices, bool train, uint64_t seed) override;
  // model.block_size under data.batching = "packed", else 0.
  int64_t pack_tokens() const override { return pack_tokens_; }
  // Packed sequences [n, T], T the fullest's fill: "idx" and "loss_mask" as
  // make_batch's, and, where a sequence holds more than one row, "positions"
  // (restarting at 0 for each row), "segments" (the row, -1 after the last)
  // and the nn::PackedRows that GPT::features runs attention by, a row at a
  // time. A micro-batch of single rows is a padded batch, as make_batch's.
  tandem::Batch make_packed_batch(const tandem::MicroBatch& micro_batch, bool train, uint64_t seed) override;
  void complete_batch(tandem::Batch& batch) const override;
  // The cross-entropy summed over the summary tokens the batch predicts, and
  // their number.
  tandem::Loss loss(torch::nn::Module& model, const tandem::Batch& batch) override;
  // rouge1, rouge2, rougeL, rougeLsum: the F1 of greedy summaries of the
  // RougeDuringTraining examples, as `summarize eval` scores them
  // (score_summaries); none without them.
  tandem::Metrics collective_metrics(torch::nn::Module& model, const tandem::EvalContext& ctx) override;
  std::vector<std::string> metric_names() const override;
  std::string metric_mode(const std::string& name) const override;
  // For the worst micro-batch: every row as long as the longest training
  // sequence, with as many summary tokens as the longest summary; packed,
  // every sequence full, with the largest share of summary tokens any row
  // has. For query.batch: its rows at its padded length, its summary tokens.
  tandem::Activations activation_bytes(const tandem::ActivationQuery& query) const override;
  int64_t tokens_in(const tandem::Batch& batch) const override;
  // Every row at the batch's padded length.
  int64_t tokens_computed_in(const tandem::Batch& batch) const override;
  // The training and the validation sequences' lengths under
  // data.batching = "grouped" or "packed" (evaluation is grouped under both).
  std::shared_ptr<const std::vector<int64_t>> group_lengths(bool train) const override {
    return train ? train_lengths_ : val_lengths_;
  }
  double flops_in(const tandem::Batch& batch) const override;
  // The loss honours batch["valid"], so no example is left out of an epoch.
  bool drop_last() const override { return false; }

 private:
  ModelOptions spec_;
  std::string frozen_base_;
  TokenSet train_, val_;
  int64_t pad_;
  std::optional<RougeDuringTraining> rouge_;
  std::shared_ptr<const std::vector<int64_t>> train_lengths_, val_lengths_;  // under "grouped" or "packed"
  int64_t pack_tokens_ = 0;
  RowBounds rows_;  // of train_
  GenerationBounds generation_;  // rouge_'s
};

// Builds the model a run asks for: a preset or explicit sizes, from scratch
// or from a Hugging Face directory ("hf:DIR"); under LoRA, that base frozen
// with adapters attached (model/lora.h).
GPT make_model(const ModelOptions& spec);

// What names a LoRA run's base: the checksum of its model.safetensors
// (io/file_checksum.h), which checkpoints record as "frozen_base".
std::string base_checksum(const ModelOptions& spec);

}  // namespace summarize
