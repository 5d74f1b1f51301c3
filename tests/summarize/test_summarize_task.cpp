// SummarizeTask, the part of summarize that training runs: its batches, the
// loss that trains (against the full-logits cross-entropy it stands for), and
// the token and FLOP counts behind tokens_per_s, flops_per_s and MFU.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <vector>

#include "../unit/split_objective.h"
#include "app/summarize_task.h"
#include "model/gpt2.h"
#include "tandem/data/loader.h"
#include "tandem/nn/recompute.h"

namespace {

using summarize::GPTConfig;
using summarize::SummarizeTask;
using summarize::TokenSet;

constexpr int64_t kEot = 49;

GPTConfig task_test_config() {
  GPTConfig config;
  config.n_layer = 2;
  config.n_head = 2;
  config.n_embd = 8;
  config.vocab_size = 50;
  config.block_size = 16;
  return config;
}

// Row 0: 3 prompt tokens, a 2-token summary and <|endoftext|> (length 6);
// row 1: 2 prompt tokens, a 1-token summary and <|endoftext|> (length 4).
TokenSet two_examples() {
  TokenSet set;
  set.add({5, 6, 7, 10, 11, kEot}, 3, 0);
  set.add({8, 9, 12, kEot}, 2, 1);
  return set;
}

// Rows as drawn, each padded to the micro-batch's longest ("random").
SummarizeTask make_task() {
  summarize::BatchingKeys random;
  random.batching = "random";
  return SummarizeTask(summarize::ModelOptions{task_test_config()}, two_examples(), TokenSet{}, kEot, std::nullopt,
                       random);
}

tandem::Batch batch_of(SummarizeTask& task, std::vector<uint8_t> valid) {
  return tandem::make_loop_batch(task, tandem::MicroBatch{{0, 1}, valid, {}}, true, 0);
}

TEST(SummarizeTask, BatchesPadWithTheEndTokenAndMaskTheSummary) {
  SummarizeTask task = make_task();
  const tandem::Batch batch = batch_of(task, {1, 1});
  EXPECT_TRUE(torch::equal(batch.at("idx"), torch::tensor({5, 6, 7, 10, 11, 49, 8, 9, 12, 49, 49, 49}).view({2, 6})));
  EXPECT_TRUE(torch::equal(batch.at("loss_mask"),
                           torch::tensor({0, 0, 0, 1, 1, 1, 0, 0, 1, 1, 0, 0}).view({2, 6}).to(torch::kBool)));
  // The positions (of the 2 x 5 that predict a next token) whose next token
  // is a summary's: made on the host, so the loss needs no nonzero on the
  // device; a padding row predicts nothing.
  EXPECT_TRUE(torch::equal(batch.at("predict_at"), torch::tensor({2, 3, 4, 6, 7}, torch::kLong)));
  EXPECT_TRUE(torch::equal(batch_of(task, {1, 0}).at("predict_at"), torch::tensor({2, 3, 4}, torch::kLong)));
}

TEST(SummarizeTask, CountsTheTokensAndFlopsOfValidRowsOnly) {
  SummarizeTask task = make_task();
  // By hand, with 2 layers, c = 8 and 50 outputs; three times the forward's:
  //   row 0, 6 tokens, the head at 3: blocks 2*6*2*12*64 = 18432, attention
  //   2*2*2*8*(6*7/2) = 1344, head 2*3*50*8 = 2400 -> 3 * 22176 = 66528;
  //   row 1, 4 tokens, the head at 2: 12288 + 640 + 1600 -> 3 * 14528 = 43584.
  // Padding positions (row 1's last two) cost nothing.
  EXPECT_EQ(task.tokens_in(batch_of(task, {1, 1})), 10);
  EXPECT_DOUBLE_EQ(task.flops_in(batch_of(task, {1, 1})), 66528.0 + 43584.0);
  // A row that only fills up the epoch's last batch is not work.
  EXPECT_EQ(task.tokens_in(batch_of(task, {1, 0})), 6);
  EXPECT_DOUBLE_EQ(task.flops_in(batch_of(task, {1, 0})), 66528.0);
}

TEST(SummarizeTask, CountsEveryComputedPositionPaddingIncluded) {
  SummarizeTask task = make_task();
  // Both rows at the longer's 6 positions: 10 real tokens of 12 computed
  // (pad_fraction 1/6); a padding row is computed in full.
  EXPECT_EQ(task.tokens_computed_in(batch_of(task, {1, 1})), 12);
  EXPECT_EQ(task.tokens_computed_in(batch_of(task, {1, 0})), 12);
}

TEST(SummarizeTask, GroupsByLengthOnlyWhenAsked) {
  EXPECT_EQ(make_task().group_lengths(true), nullptr);
  EXPECT_EQ(make_task().group_lengths(false), nullptr);
  summarize::BatchingKeys grouped;
  grouped.batching = "grouped";
  TokenSet val;
  val.add({5, 12, kEot}, 1, 0);
  const SummarizeTask task(summarize::ModelOptions{task_test_config()}, two_examples(), val, kEot, std::nullopt,
                           grouped);
  ASSERT_NE(task.group_lengths(true), nullptr);
  EXPECT_EQ(*task.group_lengths(true), (std::vector<int64_t>{6, 4}));
  ASSERT_NE(task.group_lengths(false), nullptr);
  EXPECT_EQ(*task.group_lengths(false), (std::vector<int64_t>{3}));
}

SummarizeTask packed_task() {
  summarize::BatchingKeys packed;
  packed.batching = "packed";
  return SummarizeTask(summarize::ModelOptions{task_test_config()}, two_examples(), TokenSet{}, kEot, std::nullopt,
                       packed);
}

tandem::Batch packed_batch(SummarizeTask& task, std::vector<int64_t> sequence) {
  return tandem::make_loop_batch(task, tandem::MicroBatch{{0, 1}, {1, 1}, std::move(sequence)}, true, 0);
}

// Rows 0 (6 tokens) and 1 (4) end to end in one sequence (of up to the
// block's 16).
TEST(SummarizeTask, PacksRowsEndToEndWithTheirOwnPositions) {
  SummarizeTask task = packed_task();
  EXPECT_EQ(task.pack_tokens(), 16);
  const tandem::Batch batch = packed_batch(task, {0, 0});
  EXPECT_TRUE(torch::equal(batch.at("idx"), torch::tensor({5, 6, 7, 10, 11, 49, 8, 9, 12, 49}).view({1, 10})));
  EXPECT_TRUE(torch::equal(batch.at("positions"), torch::tensor({0, 1, 2, 3, 4, 5, 0, 1, 2, 3}).view({1, 10})));
  EXPECT_TRUE(torch::equal(batch.at("segments"), torch::tensor({0, 0, 0, 0, 0, 0, 1, 1, 1, 1}).view({1, 10})));
  // Predicting the summaries' tokens from the positions before them, as
  // unpacked: 2, 3, 4 of row 0; 1, 2 of row 1, at 6 + 1, 6 + 2.
  EXPECT_TRUE(torch::equal(batch.at("predict_at"), torch::tensor({2, 3, 4, 7, 8}, torch::kLong)));
  EXPECT_TRUE(torch::equal(batch.at("valid"), torch::tensor({true})));
  // The counts of the same rows unpacked, and no padding computed.
  EXPECT_EQ(task.tokens_in(batch), 10);
  EXPECT_DOUBLE_EQ(task.flops_in(batch), 66528.0 + 43584.0);
  EXPECT_EQ(task.tokens_computed_in(batch), 10);
  // A row to a sequence is a padded batch.
  const tandem::Batch alone = packed_batch(task, {0, 1});
  EXPECT_EQ(alone.count("segments"), 0u);
  EXPECT_EQ(alone.at("idx").sizes(), (std::vector<int64_t>{2, 6}));
  EXPECT_DOUBLE_EQ(task.flops_in(alone), 66528.0 + 43584.0);
}

TEST(SummarizeTask, APackedRowComputesWhatItWouldAlone) {
  torch::manual_seed(0);
  SummarizeTask task = packed_task();
  auto module = task.build_model();
  module->eval();
  auto& model = dynamic_cast<summarize::GPTImpl&>(*module);
  const tandem::Batch batch = packed_batch(task, {0, 0});
  const at::Tensor packed = model.forward(batch.at("idx"), nullptr, batch.at("positions"), {},
                                          tandem::nn::packed_rows(batch.at("segments")))[0];
  const at::Tensor row0 = model.forward(torch::tensor({5, 6, 7, 10, 11, 49}).view({1, 6}))[0];
  const at::Tensor row1 = model.forward(torch::tensor({8, 9, 12, 49}).view({1, 4}))[0];
  EXPECT_TRUE(torch::allclose(packed.narrow(0, 0, 6), row0, 1e-5, 1e-5));
  EXPECT_TRUE(torch::allclose(packed.narrow(0, 6, 4), row1, 1e-5, 1e-5));
  // And the loss is the unpacked batch's.
  const tandem::Loss unpacked = task.loss(model, batch_of(task, {1, 1}));
  const tandem::Loss loss = task.loss(model, batch);
  EXPECT_NEAR(loss.sum.item<double>(), unpacked.sum.item<double>(), 1e-5);
  EXPECT_EQ(loss.weight.item<double>(), 5.0);
}

TEST(SummarizeTask, LossIsTheSummaryCrossEntropyOfTheFullLogits) {
  torch::manual_seed(0);
  SummarizeTask task = make_task();
  auto module = task.build_model();
  module->eval();
  auto& model = dynamic_cast<summarize::GPTImpl&>(*module);
  const tandem::Batch batch = batch_of(task, {1, 1});
  const tandem::Loss loss = task.loss(model, batch);

  // What the head-on-summary-positions shortcut stands for: every position's
  // logits, the next-token cross-entropy averaged over the positions whose
  // next token is in the summary (rows 0: 3, 1: 2 of them).
  const at::Tensor idx = batch.at("idx");
  const at::Tensor logits = model.forward(idx);
  const std::vector<std::pair<int64_t, int64_t>> predicting = {{0, 2}, {0, 3}, {0, 4}, {1, 1}, {1, 2}};
  at::Tensor sum = torch::zeros({}, torch::kDouble);
  for (const auto& [row, t] : predicting)
    sum += -torch::log_softmax(logits[row][t].to(torch::kDouble), 0)[idx[row][t + 1].item<int64_t>()];
  EXPECT_NEAR(loss.sum.item<double>(), sum.item<double>(), 1e-5);
  EXPECT_EQ(loss.weight.item<double>(), 5.0);
  // And what lm_loss, the reference the model's tests and bench use, says of
  // the same tokens: their mean.
  at::Tensor learned = torch::zeros(idx.sizes(), torch::kBool);
  for (const auto& [row, t] : predicting) learned[row][t + 1] = true;
  EXPECT_NEAR(summarize::lm_loss(logits, idx, learned).item<double>() * 5.0, loss.sum.item<double>(), 1e-4);

  // A padding row leaves the loss to the valid one.
  const tandem::Loss first_only = task.loss(model, batch_of(task, {1, 0}));
  at::Tensor first_sum = torch::zeros({}, torch::kDouble);
  for (int64_t t = 2; t <= 4; ++t)
    first_sum += -torch::log_softmax(logits[0][t].to(torch::kDouble), 0)[idx[0][t + 1].item<int64_t>()];
  EXPECT_NEAR(first_only.sum.item<double>(), first_sum.item<double>(), 1e-5);
  EXPECT_EQ(first_only.weight.item<double>(), 3.0);
}

// The loss is a sum over summary tokens and their count, so a step trains the
// mean over every summary token of its global batch whatever the split.
// Sample i: a prompt of 2 + i % 3 tokens, a summary of 1 + 5i % 7 and the end
// token. A mean per micro-batch would weigh a token of the micro-batch of
// short summaries more than one of long ones.
TEST(SummarizeTask, GradientsDoNotDependOnHowTheBatchIsSplit) {
  TokenSet set;
  std::vector<int64_t> all;
  for (int64_t i = 0; i < 16; ++i) {
    std::vector<int64_t> tokens;
    for (int64_t t = 0; t < 2 + i % 3 + 1 + (i * 5) % 7; ++t) tokens.push_back((i * 7 + t * 3) % 48);
    tokens.push_back(kEot);
    set.add(tokens, 2 + i % 3, i);
    all.push_back(i);
  }
  torch::manual_seed(0);
  SummarizeTask task(summarize::ModelOptions{task_test_config()}, set, TokenSet{}, kEot);
  auto model = task.build_model();
  const auto whole = tandem::testing::split_gradients(task, *model, all, 16);
  for (int64_t micro : {8, 4, 2})
    EXPECT_LT(tandem::testing::relative_difference(tandem::testing::split_gradients(task, *model, all, micro), whole),
              1e-6)
        << "micro-batches of " << micro;
  const double naive = tandem::testing::relative_difference(tandem::testing::split_gradients(task, *model, all, 4, true), whole);
  EXPECT_GT(naive, 1e-2);
  std::printf("summarize, 4 micro-batches of 4: a mean of micro-batch means off by %.3g relative\n", naive);
}

// train.recompute = "blocks": each GPT-2 block runs again in backward, its
// dropout drawing the same masks; the gradients are bitwise the same.
TEST(SummarizeTask, RecomputedBlocksGiveBitwiseTheSameGradients) {
  GPTConfig config = task_test_config();
  config.dropout = 0.2;
  torch::manual_seed(0);
  SummarizeTask task(summarize::ModelOptions{config}, two_examples(), TokenSet{}, kEot);
  auto model = task.build_model();
  const tandem::Batch batch = batch_of(task, {1, 1});
  const auto gradients = [&](bool recompute) {
    model->zero_grad();
    torch::manual_seed(5);
    {
      tandem::nn::RecomputeScope scope(recompute);
      task.loss(*model, batch).sum.backward();
    }
    std::vector<at::Tensor> grads;
    for (const auto& p : model->parameters()) grads.push_back(p.grad().clone());
    return grads;
  };
  const auto kept = gradients(false), redone = gradients(true);
  for (size_t i = 0; i < kept.size(); ++i) EXPECT_TRUE(torch::equal(kept[i], redone[i])) << "parameter " << i;
}

}  // namespace
