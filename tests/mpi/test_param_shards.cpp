// ZeRO-1 (dist/shard.h's ParamShards, AdamW over it) on 2, 3 and 4 ranks:
// every run reaches every rank, moments gather whole on rank 0, and a sharded
// AdamW moves the weights bitwise as an unsharded one, whatever the cuts.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <unistd.h>

#include <filesystem>

#include "tandem/dist/grad_sync.h"
#include "tandem/dist/mpi_comm.h"
#include "tandem/dist/shard.h"
#include "tandem/io/checkpoint.h"
#include "tandem/dist/world.h"
#include "tandem/train/adamw.h"
#include "tandem/train/blockwise8.h"
#include "tandem/train/precision.h"
#include "world_fixture.h"

namespace tandem {
namespace {

// Odd sizes, cut mid-tensor on every world size here, a channels-last
// convolution weight (its runs are in memory order, not index order) and
// sizes that are no multiple of AdamW's vector width. Small buckets make
// several groups.
NamedTensors make_params(uint64_t seed) {
  torch::manual_seed(seed);
  NamedTensors params = {
      {"embed", torch::randn({37, 11})},
      {"conv", torch::randn({8, 3, 5, 5}).contiguous(at::MemoryFormat::ChannelsLast)},
      {"bias", torch::randn({7})},
      {"head", torch::randn({300})},
  };
  for (auto& [name, p] : params) p.requires_grad_(true);
  return params;
}
// About 1 KB: in reverse order head (1200 bytes), then bias with conv, then
// embed make three groups.
constexpr double kBucketMb = 0.001;

TEST(ParamShards, AllGatherGivesEveryRankEveryRanksRuns) {
  auto& world = test_world();
  MpiComm comm(world);
  NamedTensors params = make_params(1);
  ParamShards shards(comm, params, kBucketMb);
  torch::NoGradGuard no_grad;
  int64_t owned = 0;
  for (size_t i = 0; i < params.size(); ++i) {
    const at::Tensor flat = memory_order(params[i].second);
    flat.zero_();
    for (const ElementRun& run : shards.owned(i)) flat.narrow(0, run.offset, run.length).fill_(world.rank() + 1);
    for (const ElementRun& run : shards.owned(i)) owned += run.length;
  }
  EXPECT_EQ(owned, shards.owned_elements());
  const auto version = params[0].second._version();
  shards.all_gather();
  EXPECT_GT(params[0].second._version(), version) << "all_gather wrote the weights without moving their version";
  // Every element now holds its owner's number, and the owners' shares add up.
  auto counts = torch::zeros({world.size() + 1}, torch::kLong);
  for (const auto& [name, p] : params) {
    EXPECT_GT(p.min().item<float>(), 0) << name << " has elements no rank sent";
    counts += torch::bincount(p.detach().flatten().to(torch::kLong), {}, world.size() + 1);
  }
  auto mine = torch::tensor({owned}, torch::kLong);
  auto all = torch::zeros({world.size()}, torch::kLong);
  comm.allgather(mine, all);
  EXPECT_TRUE(torch::equal(counts.narrow(0, 1, world.size()), all));
}

TEST(ParamShards, GatherMakesWholeTensorsOnRankZeroOnly) {
  auto& world = test_world();
  MpiComm comm(world);
  NamedTensors params = make_params(2);
  ParamShards shards(comm, params, kBucketMb);
  std::vector<at::Tensor> local;
  for (size_t i = 0; i < params.size(); ++i) {
    const at::Tensor flat = memory_order(params[i].second.detach());
    std::vector<at::Tensor> runs = {flat.narrow(0, 0, 0)};
    for (const ElementRun& run : shards.owned(i)) runs.push_back(flat.narrow(0, run.offset, run.length));
    local.push_back(torch::cat(runs));
  }
  const auto whole = shards.gather(local);
  if (world.rank() != 0) {
    EXPECT_TRUE(whole.empty());
    return;
  }
  ASSERT_EQ(whole.size(), params.size());
  for (size_t i = 0; i < params.size(); ++i) {
    EXPECT_TRUE(torch::equal(whole[i], params[i].second)) << params[i].first;
    EXPECT_EQ(whole[i].strides(), params[i].second.strides()) << params[i].first;
  }
}

// Twelve steps of both, gradients the same on every rank (as after GradSync)
// and laid out row-major (the conv's differs from its weight's layout);
// decay on the matrices only. Under "8bit" (train/blockwise8.h) the shards
// align to its blocks and the tensors are large enough to be quantised.
void steps_state_and_resume(const NamedTensors& first, const NamedTensors& second, bool eight_bit) {
  auto& world = test_world();
  MpiComm comm(world);
  NamedTensors whole = first, cut = second;
  ParamShards shards(comm, cut, kBucketMb, false, eight_bit ? kQuantBlock : ParamShards::kAlign);
  AdamWOptions options;
  options.weight_decay = 0.1;
  options.eight_bit = eight_bit;
  const auto decay = [](const std::string&, const at::Tensor& p) { return p.dim() >= 2; };
  AdamW reference(whole, options, decay), sharded(cut, options, decay, &shards);
  auto step_both = [&](AdamW& a, AdamW& b, int step) {
    torch::manual_seed(100 + step);
    for (size_t i = 0; i < whole.size(); ++i) {
      const at::Tensor g = torch::randn(whole[i].second.sizes());
      whole[i].second.mutable_grad() = g.clone();
      cut[i].second.mutable_grad() = g.clone();
    }
    a.step(1e-2);
    b.step(1e-2);
    a.zero_grad();
    b.zero_grad();
  };
  for (int step = 0; step < 12; ++step) step_both(reference, sharded, step);
  for (size_t i = 0; i < whole.size(); ++i)
    EXPECT_TRUE(torch::equal(whole[i].second, cut[i].second)) << whole[i].first << " differs after 12 steps";

  // The gathered state is the unsharded one to the bit, and a sharded
  // optimizer loaded with it (on this or any world size) carries on as the
  // unsharded one does.
  const NamedTensors state = sharded.state(), expected = reference.state();
  NamedTensors given = state;
  if (world.rank() != 0) {
    EXPECT_TRUE(state.empty());
    given = expected;  // what every rank reads from the one checkpoint file
  }
  ASSERT_EQ(given.size(), expected.size());
  for (size_t k = 0; k < expected.size(); ++k) {
    EXPECT_TRUE(torch::equal(given[k].second, expected[k].second)) << expected[k].first;
    // A checkpoint file reads back row-major, the conv's moments included.
    given[k].second = given[k].second.contiguous();
  }
  // Read as a resume reads it: from the file, a tensor at a time, only the
  // rows of its runs where the parameter is row-major (AdamW::load_moment).
  const std::string file = (std::filesystem::temp_directory_path() /
                            ("tandem-param-shards-" + std::to_string(getpid()) + "-" +
                             std::to_string(world.size()) + ".h5"))
                               .string();
  tandem::save_checkpoint(file, {{"optim", given}}, {});
  AdamW resumed(cut, options, decay, &shards);
  resumed.load_state(*tandem::open_checkpoint(file).source("optim"));
  std::filesystem::remove(file);
  for (int step = 12; step < 15; ++step) step_both(reference, resumed, step);
  for (size_t i = 0; i < whole.size(); ++i)
    EXPECT_TRUE(torch::equal(whole[i].second, cut[i].second)) << whole[i].first << " differs after the resume";
}

TEST(ShardedAdamW, StepsStateAndResumeBitwiseAsUnsharded) {
  steps_state_and_resume(make_params(3), make_params(3), false);
}

// Quantised: an embedding of 4 blocks, the last short, cut between ranks at
// its blocks; a channels-last convolution of 3 blocks; a vector of 3; and a
// bias that stays fp32.
NamedTensors make_large_params(uint64_t seed) {
  torch::manual_seed(seed);
  NamedTensors params = {
      {"embed", torch::randn({37, 211})},
      {"conv", torch::randn({8, 32, 5, 5}).contiguous(at::MemoryFormat::ChannelsLast)},
      {"bias", torch::randn({7})},
      {"head", torch::randn({5000})},
  };
  for (auto& [name, p] : params) p.requires_grad_(true);
  return params;
}

TEST(ShardedAdamW, EightBitStepsStateAndResumeBitwiseAsUnsharded) {
  steps_state_and_resume(make_large_params(4), make_large_params(4), true);
}

// train.master_weights = "sharded": the matrices work in bf16, their fp32
// masters sliced over the ranks in the optimizer. With gradients a bf16
// value can hold (as a bf16 backward gives them), twelve steps keep the
// masters the fp32 AdamW's weights to the bit and the working weights
// those rounded; the gathered masters are whole on rank 0, and a fresh
// optimizer loaded with them (as a resume loads a checkpoint's "model" set)
// carries on alike. The gradients reach the fp32 blocks through
// take_gradients, as on one rank or under dist.shard = "optimizer".
void masters_step_and_resume(const NamedTensors& first, const NamedTensors& second, bool eight_bit) {
  auto& world = test_world();
  MpiComm comm(world);
  NamedTensors whole = first, cut = second;
  const std::vector<at::Tensor> fp32 = to_working_precision(cut, Precision::BF16, {"embed"});
  ASSERT_EQ(cut[0].second.scalar_type(), at::kFloat) << "the embedding stays fp32";
  ASSERT_EQ(cut[1].second.scalar_type(), at::kBFloat16) << "the convolution works in bf16";
  ASSERT_EQ(cut[1].second.strides(), whole[1].second.strides()) << "and keeps its channels-last layout";
  ParamShards shards(comm, cut, kBucketMb, /*gradients=*/true, eight_bit ? kQuantBlock : ParamShards::kAlign);
  AdamWOptions options;
  options.weight_decay = 0.1;
  options.eight_bit = eight_bit;
  options.fp32_moments = {"embed"};
  const auto decay = [](const std::string&, const at::Tensor& p) { return p.dim() >= 2; };
  AdamW reference(whole, options, decay);
  auto masters = std::make_unique<AdamW>(cut, options, decay, &shards, fp32);
  auto step_both = [&](AdamW& a, AdamW& b, int step) {
    torch::manual_seed(100 + step);
    for (size_t i = 0; i < whole.size(); ++i) {
      const at::Tensor g = torch::randn(whole[i].second.sizes()).to(at::kBFloat16).to(at::kFloat);
      whole[i].second.mutable_grad() = g.clone();
      cut[i].second.mutable_grad() = g.to(cut[i].second.scalar_type());
    }
    shards.take_gradients();
    for (const auto& [name, p] : cut) EXPECT_FALSE(p.grad().defined()) << "take_gradients left " << name << "'s .grad";
    a.step(1e-2);
    b.step(1e-2);
    a.zero_grad();
    b.zero_grad();
  };
  auto expect_rounded = [&](const std::string& when) {
    for (size_t i = 0; i < whole.size(); ++i)
      EXPECT_TRUE(torch::equal(whole[i].second.to(cut[i].second.scalar_type()), cut[i].second))
          << whole[i].first << " is not the fp32 run's weight rounded " << when;
  };
  for (int step = 0; step < 12; ++step) step_both(reference, *masters, step);
  expect_rounded("after 12 steps");

  const std::vector<at::Tensor> gathered = masters->masters();
  NamedTensors model_set;  // what a checkpoint's "model" set holds: fp32, the masters
  for (size_t i = 0; i < whole.size(); ++i) {
    if (world.rank() == 0 && gathered[i].defined()) {
      EXPECT_TRUE(torch::equal(gathered[i], whole[i].second)) << whole[i].first << "'s master is not the fp32 weight";
      EXPECT_EQ(gathered[i].strides(), whole[i].second.strides()) << whole[i].first;
    }
    model_set.emplace_back(whole[i].first, whole[i].second.detach().contiguous());
  }
  if (world.rank() == 0) EXPECT_FALSE(gathered[0].defined()) << "the fp32 embedding has no master";
  if (world.rank() != 0) EXPECT_TRUE(gathered.empty());
  const NamedTensors state = reference.state();
  std::vector<at::Tensor> rounded;
  for (const auto& [name, p] : cut) rounded.push_back(p.scalar_type() == at::kFloat ? at::Tensor() : p.to(at::kFloat));
  masters = std::make_unique<AdamW>(cut, options, decay, &shards, rounded);
  masters->load_masters(MemorySource(model_set));
  masters->load_state(state);
  for (int step = 12; step < 15; ++step) step_both(reference, *masters, step);
  expect_rounded("after the resume");
}

TEST(ShardedAdamW, MastersStepAsTheFp32WeightsAndRoundIntoTheWorkingOnes) {
  masters_step_and_resume(make_params(9), make_params(9), false);
}

TEST(ShardedAdamW, EightBitMastersStepAsTheFp32Weights) {
  masters_step_and_resume(make_large_params(10), make_large_params(10), true);
}

// ZeRO-2: GradSync reduce-scatters into the shards' gradient blocks. After
// one micro-step a rank's runs of them are its runs of the unsharded average
// (bitwise on 2 ranks, where a sum of two has one rounding either way); two
// micro-steps add up their averages, which the unsharded sync instead takes
// of the sum: the same to float rounding. No parameter keeps a .grad. Every
// tensor is a bucket of its own, and the first bucket to launch holds a
// parameter no rank uses, so that every other gradient comes before it can
// launch: those beyond the filling window wait in .grad.
TEST(ShardedGradSync, EachRankGetsItsRunsOfTheAverageAndNoGrad) {
  auto& world = test_world();
  MpiComm comm(world);
  constexpr double kTiny = 1e-6;  // a bucket per tensor
  auto net = [] {
    torch::manual_seed(5);
    return torch::nn::Sequential(torch::nn::Linear(6, 40), torch::nn::Tanh(), torch::nn::Linear(40, 3));
  };
  auto whole_net = net(), cut_net = net();
  auto named = [](torch::nn::Sequential& m) {
    NamedTensors out;
    for (const auto& p : m->named_parameters()) out.emplace_back(p.key(), p.value());
    out.emplace_back("unused", torch::ones({5}).requires_grad_(true));
    return out;
  };
  const NamedTensors whole = named(whole_net), cut = named(cut_net);
  ParamShards shards(comm, cut, kTiny, /*gradients=*/true);
  ASSERT_EQ(shards.groups().size(), cut.size());
  GradSync reference(comm, whole, kTiny), sharded(comm, cut, kTiny, true, &shards);
  auto input = [&](int micro) {
    return torch::sin(torch::arange(30, torch::kFloat).reshape({5, 6}) * (world.rank() + 1) + micro);
  };
  auto loss = [&](torch::nn::Sequential& m, int micro) { return m->forward(input(micro)).pow(2).sum(); };

  auto compare = [&](const std::string& what, bool bitwise) {
    for (size_t i = 0; i < whole.size(); ++i) {
      EXPECT_FALSE(cut[i].second.grad().defined()) << what << ": " << cut[i].first << " kept a .grad";
      const at::Tensor full = memory_order(whole[i].second.grad());
      for (const ElementRun& run : shards.owned(i)) {
        const at::Tensor want = full.narrow(0, run.offset, run.length), got = shards.gradient(run);
        EXPECT_TRUE(bitwise ? torch::equal(got, want) : torch::allclose(got, want, 1e-6, 1e-7))
            << what << ": " << whole[i].first << " differs by " << (got - want).abs().max().item<float>();
      }
    }
  };
  // One syncing micro-step of `net`, and dropping both sides' gradients.
  auto synced = [&](GradSync& sync, torch::nn::Sequential& net, int micro) {
    sync.prepare(true);
    loss(net, micro).backward();
    sync.finish();
  };
  auto clear = [&] {
    for (const auto& [name, p] : whole) p.mutable_grad().reset();
    for (const at::Tensor& block : shards.gradients()) block.zero_();
  };
  synced(reference, whole_net, 0);
  synced(sharded, cut_net, 0);
  compare("one micro-step", world.size() == 2);

  clear();
  reference.prepare(false);
  loss(whole_net, 1).backward();
  reference.prepare(true);
  loss(whole_net, 2).backward();
  reference.finish();
  for (int micro : {1, 2}) synced(sharded, cut_net, micro);
  compare("two micro-steps", false);
  // The blocks hold nothing but the runs: their squares over the ranks sum
  // to the whole gradients'.
  auto squares = torch::zeros({1}, torch::kDouble);
  for (const at::Tensor& block : shards.gradients()) squares += block.to(torch::kDouble).pow(2).sum();
  comm.allreduce(squares, ReduceOp::Sum);
  double want = 0;
  for (const auto& [name, p] : whole) want += p.grad().to(torch::kDouble).pow(2).sum().item<double>();
  EXPECT_NEAR(squares.item<double>(), want, 1e-6 * want);

  // A rank that ran out of memory before its backward meets the others'
  // reductions, and keeps no .grad; the next step syncs as ever.
  if (world.rank() == 0) {
    sharded.prepare(true);
    sharded.abandon();
  } else {
    synced(sharded, cut_net, 3);
  }
  for (const auto& [name, p] : cut) EXPECT_FALSE(p.grad().defined()) << "after abandon: " << name;
  clear();
  synced(reference, whole_net, 4);
  synced(sharded, cut_net, 4);
  compare("after an abandoned step", world.size() == 2);
}

}  // namespace
}  // namespace tandem
