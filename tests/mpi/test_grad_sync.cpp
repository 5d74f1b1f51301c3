// Gradient sync against a single process that sees the whole batch: with equal
// halves, the mean of the ranks' mean gradients is the full batch's mean
// gradient, up to float summation order (tolerance 1e-6 relative).
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "tandem/dist/grad_sync.h"
#include "tandem/dist/mpi_comm.h"
#include "tandem/dist/world.h"
#include "world_fixture.h"

namespace {

struct SyncNet : torch::nn::Module {
  SyncNet() {
    a = register_module("a", torch::nn::Linear(6, 16));
    b = register_module("b", torch::nn::Linear(16, 3));
    side = register_module("side", torch::nn::Linear(6, 3));
  }
  torch::Tensor forward(const torch::Tensor& x, bool use_side) {
    auto y = b(torch::tanh(a(x)));
    return use_side ? y + side(x) : y;
  }
  torch::nn::Linear a{nullptr}, b{nullptr}, side{nullptr};
};

std::shared_ptr<SyncNet> make_net() {
  torch::manual_seed(7);  // identical weights on every rank and in the reference
  return std::make_shared<SyncNet>();
}

tandem::NamedTensors named(const std::shared_ptr<SyncNet>& net) {
  tandem::NamedTensors out;
  for (const auto& p : net->named_parameters()) out.emplace_back(p.key(), p.value());
  return out;
}

using tandem::GradSync;

torch::Tensor data(int64_t n) {
  auto g = torch::arange(n * 6, torch::kFloat).reshape({n, 6});
  return torch::sin(g * 0.37);
}

torch::Tensor loss_of(SyncNet& net, const torch::Tensor& x, bool use_side = false) {
  return net.forward(x, use_side).pow(2).mean();
}

void expect_grads_close(const std::shared_ptr<SyncNet>& got, const std::shared_ptr<SyncNet>& want, const std::string& what) {
  auto g = got->named_parameters();
  auto w = want->named_parameters();
  for (const auto& p : w) {
    const auto& gg = g[p.key()].grad();
    if (!p.value().grad().defined()) {  // unused everywhere: synced as zeros
      EXPECT_TRUE(!gg.defined() || gg.abs().max().item<float>() == 0) << what << ": " << p.key();
      continue;
    }
    ASSERT_TRUE(gg.defined()) << what << ": no grad for " << p.key();
    EXPECT_TRUE(torch::allclose(gg, p.value().grad(), 1e-6, 1e-7))
        << what << ": " << p.key() << " differs by " << (gg - p.value().grad()).abs().max().item<float>();
  }
}

class GradSyncBuckets : public ::testing::TestWithParam<double> {};

TEST_P(GradSyncBuckets, TwoHalvesEqualTheWholeBatch) {
  auto& world = test_world();
  tandem::MpiComm comm(world);
  const int n = world.size();
  const int64_t per_rank = 4;
  auto x = data(per_rank * n);

  auto ref = make_net();
  loss_of(*ref, x).backward();

  auto net = make_net();
  GradSync sync(comm, named(net), GetParam());
  sync.prepare(true);
  loss_of(*net, x.narrow(0, world.rank() * per_rank, per_rank)).backward();
  sync.finish();
  expect_grads_close(net, ref, "bucket_mb " + std::to_string(GetParam()));
}

// 25 MB: one bucket; 1e-4 MB (~100 bytes): every parameter its own bucket.
INSTANTIATE_TEST_SUITE_P(Sizes, GradSyncBuckets, ::testing::Values(25.0, 0.0005, 1e-4));

TEST(GradSync, BucketsFollowTheCapInReverseOrder) {
  auto& world = test_world();
  tandem::MpiComm comm(world);
  auto net = make_net();
  GradSync one(comm, named(net), 25.0);
  EXPECT_EQ(one.num_buckets(), 1);
  GradSync each(comm, named(net), 1e-9);
  // Every parameter its own bucket, the last registered first.
  EXPECT_EQ(each.bucket_sizes(), (std::vector<int64_t>{3, 18, 3, 48, 16, 96}));
}

TEST(GradSync, AccumulatedMicroStepsEqualOneBigStep) {
  auto& world = test_world();
  tandem::MpiComm comm(world);
  const int n = world.size();
  const int64_t micro = 2, accum = 3;
  auto x = data(micro * accum * n);

  auto ref = make_net();
  loss_of(*ref, x).backward();

  auto net = make_net();
  GradSync sync(comm, named(net), 1e-4);
  for (int64_t a = 0; a < accum; ++a) {
    sync.prepare(a == accum - 1);
    // Micro-batch j = a * world + rank: the sampler's layout.
    const int64_t j = a * n + world.rank();
    (loss_of(*net, x.narrow(0, j * micro, micro)) / accum).backward();
  }
  sync.finish();
  expect_grads_close(net, ref, "accumulation");
}

// A convolution weight in channels-last order (model.channels_last): synced
// through its bucket in its own memory order, it comes back averaged and
// still channels-last, with several micro-steps accumulated too.
TEST(GradSync, ChannelsLastWeightsAreAveragedInTheirOwnLayout) {
  auto& world = test_world();
  tandem::MpiComm comm(world);
  const int n = world.size();
  auto make_conv = [] {
    torch::manual_seed(11);
    torch::nn::Conv2d conv(torch::nn::Conv2dOptions(3, 5, 3).bias(false));
    conv->weight.set_data(conv->weight.contiguous(at::MemoryFormat::ChannelsLast));
    return conv;
  };
  const auto x = torch::sin(torch::arange(4 * n * 3 * 6 * 6, torch::kFloat) * 0.13).reshape({4 * n, 3, 6, 6});
  auto ref = make_conv();
  ref->forward(x).pow(2).mean().backward();

  auto conv = make_conv();
  GradSync sync(comm, {{"weight", conv->weight}}, 25.0);
  for (int64_t a = 0; a < 2; ++a) {
    sync.prepare(a == 1);
    const int64_t j = a * n + world.rank();
    (conv->forward(x.narrow(0, j * 2, 2)).pow(2).mean() / 2).backward();
  }
  sync.finish();
  const auto& got = conv->weight.grad();
  EXPECT_TRUE(got.is_contiguous(at::MemoryFormat::ChannelsLast));
  EXPECT_TRUE(torch::allclose(got, ref->weight.grad(), 1e-5, 1e-6))
      << "differs by " << (got - ref->weight.grad()).abs().max().item<float>();
}

// The trainer's order: the loss (which may take gradients of its own, as an
// adaptive loss weight does with autograd::grad), then prepare(), then
// backward. The hooks see the loss's own gradients while not syncing and let
// them pass, so the step's gradients are still exactly the average.
TEST(GradSync, GradientsALossTakesBeforePrepareAreNotTheSteps) {
  auto& world = test_world();
  tandem::MpiComm comm(world);
  const int64_t per_rank = 4;
  auto x = data(per_rank * world.size());

  auto ref = make_net();
  loss_of(*ref, x).backward();

  auto net = make_net();
  GradSync sync(comm, named(net), 1e-4);
  for (int step = 0; step < 2; ++step) {  // the second after a finish()
    for (auto& p : net->parameters()) p.mutable_grad() = at::Tensor();
    const auto loss = loss_of(*net, x.narrow(0, world.rank() * per_rank, per_rank));
    const auto own = torch::autograd::grad({loss}, {net->a->weight}, {}, /*retain_graph=*/true);
    ASSERT_TRUE(own[0].defined());
    sync.prepare(true);
    loss.backward();
    sync.finish();
    expect_grads_close(net, ref, "step " + std::to_string(step));
  }
}

TEST(GradSync, AParameterUnusedOnSomeRanksIsAveragedWithZerosNotAHang) {
  auto& world = test_world();
  tandem::MpiComm comm(world);
  const int n = world.size();
  auto x = data(4);
  const bool use_side = world.rank() == 0;

  // Rank 0's gradient for `side`, computed alone.
  auto solo = make_net();
  loss_of(*solo, x, true).backward();

  auto net = make_net();
  GradSync sync(comm, named(net), 1e-4);
  sync.prepare(true);
  loss_of(*net, x, use_side).backward();
  sync.finish();
  ASSERT_TRUE(net->side->weight.grad().defined());
  EXPECT_TRUE(torch::allclose(net->side->weight.grad(), solo->side->weight.grad() / n, 1e-6, 1e-7));
}

// A rank that ran out of memory abandons the step: mid-way through its
// syncing backward (the last layer's buckets already on their way), or after
// an accumulating one. The others finish with zeros for what it never sent,
// and nobody waits forever.
TEST(GradSync, ARankThatAbandonsTheStepSendsZerosForTheRestNotAHang) {
  auto& world = test_world();
  tandem::MpiComm comm(world);
  const int n = world.size();
  auto x = data(4);
  auto solo = make_net();
  loss_of(*solo, x).backward();

  for (const bool mid_backward : {true, false}) {
    auto net = make_net();
    GradSync sync(comm, named(net), 1e-4);  // a bucket per parameter
    if (world.rank() == 0) {
      sync.prepare(true);
      loss_of(*net, x).backward();
      sync.finish();
      // Every other rank sent b's gradients (the same as rank 0's) mid-backward, zeros after an accumulating one.
      const double b_share = mid_backward ? 1.0 : 1.0 / n;
      EXPECT_TRUE(torch::allclose(net->b->weight.grad(), solo->b->weight.grad() * b_share, 1e-6, 1e-7)) << mid_backward;
      EXPECT_TRUE(torch::allclose(net->a->weight.grad(), solo->a->weight.grad() / n, 1e-6, 1e-7)) << mid_backward;
    } else if (mid_backward) {
      // A backward that stopped after the last layer: b's hooks fired, a's never.
      sync.prepare(true);
      net->b(torch::tanh(net->a(x)).detach()).pow(2).mean().backward();
      sync.abandon();
      EXPECT_FALSE(net->a->weight.grad().defined()) << "abandon() wrote gradients";
    } else {
      sync.prepare(false);
      loss_of(*net, x).backward();
      sync.abandon();
    }
  }
}

TEST(GradSync, BroadcastGivesEveryRankRankZerosWeights) {
  auto& world = test_world();
  tandem::MpiComm comm(world);
  torch::manual_seed(100 + world.rank());
  auto net = std::make_shared<SyncNet>();
  std::vector<at::Tensor> ts;
  for (auto& p : net->parameters()) ts.push_back(p);
  tandem::broadcast_from_rank0(comm, ts);
  torch::manual_seed(100);
  auto rank0 = std::make_shared<SyncNet>();
  for (size_t i = 0; i < ts.size(); ++i) EXPECT_TRUE(torch::equal(ts[i], rank0->parameters()[i]));
}

}  // namespace
