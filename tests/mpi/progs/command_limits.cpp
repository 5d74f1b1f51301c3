// A command run as the apps run theirs (run_program, run_command), its
// dist.* keys from --set: the job's limits hold in every command, from the
// moment the config is read, not only in training.
//   command_limits stop  : rank 1 stops (SIGSTOP) inside the command while
//                          rank 0 waits in a collective: the job ends with 3
//                          after dist.timeout_s, naming the collective.
//   command_limits setup : rank 0 works alone for 3 s while rank 1 waits in
//                          a setup barrier: with dist.timeout_s = 1 that is
//                          not a hang (dist.setup_timeout_s); exit 0.
#include <torch/torch.h>

#include <chrono>
#include <csignal>
#include <thread>

#include "tandem/commands.h"
#include "tandem/config/command_line.h"
#include "tandem/config/schema.h"
#include "tandem/dist/dist_keys.h"
#include "tandem/dist/mpi_comm.h"
#include "tandem/dist/world.h"
#include "tandem/program.h"

namespace {

int stop(tandem::World& world, const tandem::Config&) {
  tandem::MpiComm comm(world);
  if (world.rank() == 1) std::raise(SIGSTOP);
  auto t = torch::ones({8});
  comm.allreduce(t, tandem::ReduceOp::Sum);
  return 0;
}

int setup(tandem::World& world, const tandem::Config&) {
  if (world.rank() == 0) std::this_thread::sleep_for(std::chrono::seconds(3));
  world.setup_barrier("rank 0 to prepare the data");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  return tandem::run_program(argc, argv, [](tandem::World& world, int argc, char** argv) {
    tandem::Schema schema;
    tandem::add_dist_keys(schema);
    const auto cli = tandem::parse_command_line(argc, argv, schema, "command_limits");
    const std::vector<tandem::Command> commands = {{"stop", "", stop}, {"setup", "", setup}};
    return tandem::run_command(tandem::find_command(commands, cli.positional), world, cli.config);
  });
}
