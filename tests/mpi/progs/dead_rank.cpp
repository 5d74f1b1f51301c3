// A job in which rank 1 leaves while rank 0 waits in a collective. Run under
// mpiexec by ctest: the job must end non-zero within seconds, never hang.
//   dead_rank crash  : rank 1 dies abruptly (the launcher must notice)
//   dead_rank leave  : rank 1 finishes cleanly without joining the collective
//                      (only the watchdog can notice)
#include <torch/torch.h>

#include <cstdlib>
#include <cstring>

#include "tandem/dist/mpi_comm.h"
#include "tandem/dist/world.h"

int main(int argc, char** argv) {
  tandem::World world(argc, argv);
  world.watchdog().set_timeout(3.0);
  const bool crash = argc > 1 && std::strcmp(argv[1], "crash") == 0;
  if (world.rank() == 1) {
    if (crash) std::abort();
    return 0;
  }
  tandem::MpiComm comm(world);
  auto t = torch::ones({8});
  comm.allreduce(t, tandem::ReduceOp::Sum);
  return 0;
}
