// Batch-norm running statistics on 2 ranks of carotid's ResNet (channels-last
// weights, through the collective contract): each rank's statistics follow
// its own shard, so the trainer averages them where they are read. After
// training both ranks hold the same buffers, the model file holds those the
// evaluation used, and the 2-rank evaluation equals the same model evaluated
// on one rank over the whole evaluation set.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <filesystem>

#include "tandem/config/command_line.h"
#include "tandem/dist/dist_keys.h"
#include "tandem/dist/mpi_comm.h"
#include "tandem/dist/world.h"
#include "tandem/io/checkpoint.h"
#include "tandem/nn/resnet.h"
#include "tandem/train/trainer.h"
#include "tandem/train/train_keys.h"
#include "resnet_task.h"
#include "world_fixture.h"

namespace {

namespace fs = std::filesystem;

// On the CPU on any machine: the check below gathers with an MPI communicator.
TEST(TrainerBuffers, RanksAgreeOnBatchNormStatisticsAndEvaluateAsOneRank) {
  auto& world = test_world();
  ASSERT_EQ(world.size(), 2);
  const fs::path out = fs::temp_directory_path() / "tandem-trainer-buffers";
  if (world.rank() == 0) fs::remove_all(out);
  world.barrier();

  tandem::Schema schema;
  tandem::add_dist_keys(schema);
  tandem::add_train_keys(schema);
  const std::string dir = "train.out_dir=" + out.string();
  const char* argv[] = {"test",           "--set", dir.c_str(),          "--set", "train.max_steps=3",
                        "--set",          "train.micro_batch=4",         "--set", "train.global_batch=8",
                        "--set",          "train.lr=0.01",               "--set", "obs.gpu_every_s=0",
                        "--set",          "obs.tensorboard=false",       "--set", "dist.device=cpu"};
  std::ostringstream quiet;
  auto cli = tandem::parse_command_line(static_cast<int>(std::size(argv)), argv, schema, "test", quiet);
  ResNetTask task;
  tandem::Trainer trainer(world, cli.config, task, tandem::train_settings(cli.config));
  ASSERT_EQ(trainer.run(), 0);
  auto& model = trainer.model();

  // 1. The same buffers on both ranks.
  tandem::MpiComm comm(world);
  int64_t checked = 0;
  for (const auto& b : model.named_buffers()) {
    if (!b.value().is_floating_point()) continue;
    auto mine = b.value().contiguous();
    auto both = torch::empty({2, mine.numel()}, mine.options());
    comm.allgather(mine, both);
    EXPECT_TRUE(torch::equal(both[0], both[1])) << b.key() << " differs between the ranks";
    ++checked;
  }
  EXPECT_GT(checked, 30);

  // 2. The model file holds the buffers the evaluation used.
  const auto file = tandem::load_checkpoint((out / "models" / "final_model.h5").string());
  std::map<std::string, at::Tensor> saved(file.sets.at("model").begin(), file.sets.at("model").end());
  for (const auto& b : model.named_buffers())
    EXPECT_TRUE(torch::equal(saved.at(b.key()), b.value())) << b.key() << " saved differs from the evaluated";

  // 3. The 2-rank evaluation equals one rank's over the whole set.
  std::vector<int64_t> all(kEval);
  for (int64_t i = 0; i < kEval; ++i) all[i] = i;
  model.eval();
  torch::NoGradGuard no_grad;
  const double one_rank = ResNetTask::per_sample(model, task.make_batch(all, false, 0)).mean().item<double>();
  const double two_ranks = trainer.last_eval().at("eval_loss");
  EXPECT_NEAR(two_ranks, one_rank, 1e-5 * std::abs(one_rank));

  world.barrier();
  if (world.rank() == 0) fs::remove_all(out);
}

}  // namespace
