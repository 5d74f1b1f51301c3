// gather_eval_rows on two real ranks with Task::group_lengths(false): each
// rank's share is batched longest first, so its batches pad less, and every
// row still comes back in dataset order.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <memory>
#include <vector>

#include "tandem/dist/world.h"
#include "tandem/train/evaluate.h"
#include "tandem/train/task.h"
#include "world_fixture.h"

namespace {

// Samples whose lengths alternate long and short on each of 2 ranks: a batch
// is as wide as its longest.
// Each row says which sample it is and how wide its batch was.
class WidthTask : public tandem::Task {
 public:
  explicit WidthTask(bool by_length) {
    if (by_length) lengths_ = std::make_shared<const std::vector<int64_t>>(kLengths);
  }
  std::shared_ptr<torch::nn::Module> build_model() override { return torch::nn::Linear(1, 1).ptr(); }
  int64_t train_size() const override { return 0; }
  int64_t eval_size() const override { return static_cast<int64_t>(kLengths.size()); }
  tandem::Batch make_batch(const std::vector<int64_t>& indices, bool, uint64_t) override {
    int64_t width = 0;
    for (int64_t i : indices) width = std::max(width, kLengths[i]);
    return {{"index", torch::tensor(indices, torch::kLong)},
            {"width", torch::full({static_cast<int64_t>(indices.size())}, width, torch::kLong)}};
  }
  tandem::Loss loss(torch::nn::Module&, const tandem::Batch&) override { return {}; }
  tandem::EvalRows eval_rows(torch::nn::Module&, const tandem::Batch& batch) override {
    return {{"index", batch.at("index")}, {"width", batch.at("width")}};
  }
  std::shared_ptr<const std::vector<int64_t>> group_lengths(bool train) const override {
    return train ? nullptr : lengths_;
  }

  inline static const std::vector<int64_t> kLengths = {1, 1, 9, 9, 2, 2, 8, 8, 3, 3, 7, 7};

 private:
  std::shared_ptr<const std::vector<int64_t>> lengths_;
};

tandem::EvalRows rows_of(bool by_length) {
  WidthTask task(by_length);
  auto model = task.build_model();
  tandem::EvalContext ctx;
  ctx.world = &test_world();
  ctx.micro_batch = 2;
  return tandem::gather_eval_rows(task, *model, ctx);
}

TEST(GatherInOrder, EvaluationBatchedByLengthKeepsDatasetOrderAndPadsLess) {
  const tandem::EvalRows in_order = rows_of(false), by_length = rows_of(true);
  const auto n = static_cast<int64_t>(WidthTask::kLengths.size());
  EXPECT_TRUE(torch::equal(in_order.at("index"), torch::arange(n, torch::kLong)));
  EXPECT_TRUE(torch::equal(by_length.at("index"), torch::arange(n, torch::kLong)));
  if (test_world().size() != 2) GTEST_SKIP() << "the widths below are worked out for 2 ranks";
  // Each rank holds lengths 1 9 2 8 3 7 (samples 0, 2, ..., 10 on rank 0).
  // In order its batches of 2 are 9, 8 and 7 wide; longest first, {9, 8}
  // {7, 3} {2, 1}: 9, 7 and 2. Sample 0 (length 1) went from a batch 9 wide
  // to one 2 wide, and the rows' widths summed from 2 x 2 x 24 to 2 x 2 x 18.
  EXPECT_EQ(in_order.at("width")[0].item<int64_t>(), 9);
  EXPECT_EQ(by_length.at("width")[0].item<int64_t>(), 2);
  EXPECT_EQ(by_length.at("width")[2].item<int64_t>(), 9);
  EXPECT_EQ(in_order.at("width").sum().item<int64_t>(), 96);
  EXPECT_EQ(by_length.at("width").sum().item<int64_t>(), 72);
}

}  // namespace
