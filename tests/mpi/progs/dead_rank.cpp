// A job in which rank 1 fails the other. Run under mpiexec by ctest: the job
// must end non-zero within seconds, never hang.
//   dead_rank crash  : rank 1 dies abruptly (the launcher must notice)
//   dead_rank leave  : rank 1 finishes cleanly without joining the collective
//                      (only the watchdog can notice)
//   dead_rank stop   : rank 1 joins every collective, then stops (SIGSTOP)
//                      before MPI_Finalize (only the shut-down deadline can
//                      notice: the watchdog has nothing in flight)
//   dead_rank stop-after : rank 1 stops after MPI_Finalize, the job's work
//                      done (no rank can notice; srun --wait ends it)
#include <torch/torch.h>

#include <csignal>
#include <cstdlib>
#include <cstring>

#include "tandem/dist/mpi_comm.h"
#include "tandem/dist/world.h"

int main(int argc, char** argv) {
  const char* mode = argc > 1 ? argv[1] : "leave";
  const bool stop_after = std::strcmp(mode, "stop-after") == 0;
  int rank = 0;
  {
    tandem::World world(argc, argv);
    world.watchdog().set_timeout(3.0);
    rank = world.rank();
    if (rank == 1 && std::strcmp(mode, "crash") == 0) std::abort();
    if (rank == 1 && std::strcmp(mode, "leave") == 0) return 0;
    tandem::MpiComm comm(world);
    auto t = torch::ones({8});
    comm.allreduce(t, tandem::ReduceOp::Sum);
    if (rank == 1 && !stop_after) std::raise(SIGSTOP);
  }
  if (rank == 1 && stop_after) std::raise(SIGSTOP);
  return 0;
}
