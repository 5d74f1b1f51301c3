// apps/vavae: a VAE tokenizer, latents, a class-conditional DiT and images
// per user, as stages: train-vae, extract, train-dit, sample, evaluate, and
// complete (all of them, skipping those already done).
#include <iostream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "app/commands.h"
#include "app/sample_keys.h"
#include "keys.h"
#include "tandem/commands.h"
#include "tandem/config/command_line.h"
#include "tandem/config/schema.h"
#include "tandem/dist/world.h"
#include "tandem/error.h"
#include "tandem/program.h"

namespace {

// In a training stage a preemption signal must end in a checkpoint and a
// requeue; extract and sample have no checkpoint to write and just stop.
const std::vector<tandem::Command>& commands() {
  static const std::vector<tandem::Command> table = {
      {"plan", "[--gpus t4x2] [--shard all] [--data]: will each stage fit; its memory plan a rank, before it runs",
       vavae::run_plan},
      {"train-vae", "train the VAE on data.root/train (OUT/vae/, OUT/vae/vae.safetensors)", vavae::run_train_vae, true},
      {"extract", "encode train and val (OUT/latent_features/{train,val}.h5)", vavae::run_extract},
      {"train-dit", "train the DiT on the latents (OUT/dit/)", vavae::run_train_dit, true},
      {"sample",
       "--user-ids 1 2 3 --num-samples-per-user 4 --seed 42 --guidance-scale 4.0 --num-steps 50\n"
       "[--dit-checkpoint FILE] [--output-dir DIR] (OUT/samples/user{UU}_{iii}.png, grid.png)",
       vavae::run_sample},
      {"evaluate",
       "how often a classifier of real images recognises the user of a generated one\n"
       "(OUT/evaluate/evaluate.json)",
       vavae::run_evaluate, true},
      {"complete", "all of the above in order, skipping finished stages unless --force", vavae::run_complete, true}};
  return table;
}

int run(tandem::World& world, int argc, char** argv) {
  const auto schema = vavae::vavae_schema();
  std::set<std::string> names;
  for (const auto& command : commands()) names.insert(command.name);
  const std::vector<std::string> args = vavae::join_user_ids(std::vector<std::string>(argv, argv + argc), names);
  std::vector<const char*> pointers;
  for (const auto& a : args) pointers.push_back(a.c_str());
  std::ostringstream quiet;
  auto cli = tandem::parse_command_line(
      static_cast<int>(pointers.size()), pointers.data(), schema,
      "apps/vavae COMMAND [options]\n"
      "Per-user image generation: a VAE tokenizer, a class-conditional DiT on its latents, samples.\n"
      "Every command works under one folder, --run-dir OUT = train.out_dir.\n" +
          tandem::commands_help(commands()),
      world.is_main() ? std::cout : quiet);
  if (cli.help) return tandem::kExitOk;
  return tandem::run_command(tandem::find_command(commands(), cli.positional), world, cli.config);
}

}  // namespace

int main(int argc, char** argv) { return tandem::run_program(argc, argv, run); }
