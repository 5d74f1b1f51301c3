// Batch-norm statistics recomputed for the weights a model holds: after the
// call, each layer's running mean is the mean over every batch of every rank,
// and its running variance the pooled variance, computed here by hand from
// the same inputs.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "tandem/dist/mpi_comm.h"
#include "tandem/dist/world.h"
#include "tandem/train/batch_norm_stats.h"
#include "world_fixture.h"

namespace {

struct NormNet : torch::nn::Module {
  NormNet() {
    bn2 = register_module("bn2", torch::nn::BatchNorm2d(3));
    bn1 = register_module("bn1", torch::nn::BatchNorm1d(torch::nn::BatchNormOptions(3).momentum(0.3)));
  }
  // bn1 sees bn2's output pooled, so its statistics depend on bn2's
  // being in training mode during the passes.
  torch::Tensor forward(const torch::Tensor& x) { return bn1(bn2(x).mean({2, 3})); }
  torch::nn::BatchNorm2d bn2{nullptr};
  torch::nn::BatchNorm1d bn1{nullptr};
};

// Rank r's batch i: 4 images of 3 channels, 2x2, each rank and batch its own.
torch::Tensor batch(int rank, int64_t i) {
  auto g = at::make_generator<at::CPUGeneratorImpl>(100 * rank + i);
  return torch::randn({4, 3, 2, 2}, g, torch::kDouble) * (1.0 + rank) + 2.0 * i;
}

TEST(BatchNormStats, MeanAndPooledVarianceOverEveryBatchOfEveryRank) {
  auto& world = test_world();
  tandem::MpiComm comm(world);
  ASSERT_EQ(world.size(), 2);
  torch::manual_seed(1);
  NormNet net;
  net.to(torch::kDouble);
  net.eval();
  // Statistics from before the call must not survive it.
  net.bn2->running_mean.fill_(50.0);
  const int64_t batches = 3;
  int64_t calls = 0;
  const int64_t layers = tandem::recompute_batch_norm_stats(
      net, batches,
      [&](int64_t i) {
        EXPECT_TRUE(net.is_training());
        EXPECT_FALSE(torch::GradMode::is_enabled());
        EXPECT_EQ(i, calls++);
        net.forward(batch(world.rank(), i));
      },
      &comm);
  EXPECT_EQ(layers, 2);
  EXPECT_EQ(calls, batches);
  EXPECT_FALSE(net.is_training());
  EXPECT_DOUBLE_EQ(*net.bn2->options.momentum(), 0.1);
  EXPECT_DOUBLE_EQ(*net.bn1->options.momentum(), 0.3);

  // By hand for bn2: per batch, a channel's mean and unbiased variance over
  // its 16 values; a layer with unset momentum keeps their plain means over
  // the batches; the ranks' equal shares pool into the mean of the means and
  // the mean second moment less the pooled mean's square.
  torch::Tensor mean = torch::zeros({3}, torch::kDouble), second = torch::zeros({3}, torch::kDouble);
  for (int r = 0; r < 2; ++r) {
    torch::Tensor m = torch::zeros({3}, torch::kDouble), v = torch::zeros({3}, torch::kDouble);
    for (int64_t i = 0; i < batches; ++i) {
      const auto x = batch(r, i).transpose(0, 1).reshape({3, -1});
      m += x.mean(1) / batches;
      v += x.var(1, /*unbiased=*/true) / batches;
    }
    mean += m / 2;
    second += (v + m * m) / 2;
  }
  EXPECT_TRUE(torch::allclose(net.bn2->running_mean, mean, 1e-12, 1e-12)) << net.bn2->running_mean << mean;
  EXPECT_TRUE(torch::allclose(net.bn2->running_var, second - mean * mean, 1e-12, 1e-12))
      << net.bn2->running_var << second - mean * mean;
  // Every rank ends with the same statistics in both layers.
  for (const auto& t : {net.bn2->running_mean, net.bn2->running_var, net.bn1->running_mean, net.bn1->running_var}) {
    auto other = t.clone();
    comm.broadcast(other, 0);
    EXPECT_TRUE(torch::equal(t, other));
  }
}

TEST(BatchNormStats, BitwiseAsLibTorchWithUnsetMomentum) {
  // The cumulative average LibTorch keeps with momentum unset (reading
  // num_batches_tracked on the host each forward) is what the recomputation
  // gives with its momentum set on the host, to the bit.
  torch::manual_seed(2);
  NormNet net, reference;
  net.to(torch::kFloat);
  reference.to(torch::kFloat);
  torch::NoGradGuard no_grad;
  for (auto* bn : {&reference.bn2->options.momentum(), &reference.bn1->options.momentum()}) *bn = std::nullopt;
  reference.train(true);
  for (int64_t i = 0; i < 5; ++i) reference.forward(batch(0, i).to(torch::kFloat));
  tandem::recompute_batch_norm_stats(
      net, 5, [&](int64_t i) { net.forward(batch(0, i).to(torch::kFloat)); }, nullptr);
  for (const auto& [mine, theirs] :
       {std::pair{net.bn2->running_mean, reference.bn2->running_mean}, {net.bn2->running_var, reference.bn2->running_var},
        {net.bn1->running_mean, reference.bn1->running_mean}, {net.bn1->running_var, reference.bn1->running_var}})
    EXPECT_TRUE(torch::equal(mine, theirs)) << mine << theirs;
}

TEST(BatchNormStats, ModelWithoutBatchNormRunsNothing) {
  torch::nn::Linear net(2, 2);
  int64_t calls = 0;
  EXPECT_EQ(tandem::recompute_batch_norm_stats(
                *net, 5, [&](int64_t) { ++calls; }, nullptr),
            0);
  EXPECT_EQ(calls, 0);
}

}  // namespace

namespace {

// Pooling the running statistics a trainer keeps (pool_batch_norm_buffers),
// run on 3 ranks: equal statistics come out bitwise unchanged, where a
// float32 average of 3 equal values moves some by an ulp; a buffer that is
// not a statistic is left alone, and an EMA's copies pool as the model's do.
struct Tabled : torch::nn::Module {
  Tabled() {
    bn = register_module("bn", torch::nn::BatchNorm1d(64));
    table = register_buffer("table", torch::zeros({8}));
  }
  torch::nn::BatchNorm1d bn{nullptr};
  torch::Tensor table;
};

TEST(BatchNormPooling, EqualStatisticsSurviveBitwiseAndOtherBuffersAreLeftAlone) {
  auto& world = test_world();
  tandem::MpiComm comm(world);
  Tabled net;
  auto g = at::make_generator<at::CPUGeneratorImpl>(7);
  net.bn->running_mean.copy_(torch::randn({64}, g) * 3.7);
  net.bn->running_var.copy_(torch::rand({64}, g) * 1.3 + 0.1);
  net.table.fill_(static_cast<double>(world.rank()) + 0.5);
  const auto mean = net.bn->running_mean.clone(), var = net.bn->running_var.clone();
  tandem::NamedTensors ema = {{"bn.running_mean", mean.clone()}, {"bn.running_var", var.clone()},
                              {"table", net.table.clone()}};
  // What an ulp's move would look like: the float32 mean of the ranks' equal
  // values, summed then divided, is not always the value.
  auto f32_mean = mean.clone();
  comm.allreduce(f32_mean, tandem::ReduceOp::Sum);
  f32_mean.div_(world.size());
  if (world.size() == 3) EXPECT_FALSE(torch::equal(f32_mean, mean)) << "the test's values would not show the ulp";

  tandem::pool_batch_norm_buffers(net, ema, comm);
  EXPECT_TRUE(torch::equal(net.bn->running_mean, mean));
  EXPECT_TRUE(torch::equal(net.bn->running_var, var));
  EXPECT_TRUE(torch::equal(ema[0].second, mean));
  EXPECT_TRUE(torch::equal(ema[1].second, var));
  EXPECT_EQ(net.table[0].item<float>(), static_cast<float>(world.rank()) + 0.5f);
  EXPECT_EQ(ema[2].second[0].item<float>(), static_cast<float>(world.rank()) + 0.5f);
}

TEST(BatchNormPooling, VarianceCountsTheSpreadOfTheRanksMeans) {
  auto& world = test_world();
  tandem::MpiComm comm(world);
  Tabled net;
  // Rank r: mean r + 1, variance 2 (r + 1). Over n ranks, by hand: the
  // pooled mean is (n + 1) / 2; the pooled variance the mean variance,
  // n + 1, plus the spread of 1..n about its mean, (n^2 - 1) / 12.
  const double r = world.rank(), n = world.size();
  net.bn->running_mean.fill_(r + 1);
  net.bn->running_var.fill_(2 * (r + 1));
  tandem::pool_batch_norm_buffers(net, {}, comm);
  EXPECT_FLOAT_EQ(net.bn->running_mean[5].item<float>(), static_cast<float>((n + 1) / 2));
  EXPECT_FLOAT_EQ(net.bn->running_var[5].item<float>(), static_cast<float>(n + 1 + (n * n - 1) / 12));
}

}  // namespace
