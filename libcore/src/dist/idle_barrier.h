#pragma once
// A barrier that waits without a core. Open MPI's blocking calls poll for as
// long as they wait, yielding the core between polls (mpi_yield_when_idle)
// but taking it back at every turn: a rank waiting at a barrier while rank 0
// writes a checkpoint spends the whole write polling. Measured with perf on
// a 2-rank carotid run that checkpoints every step, sched_yield was a fifth
// of all CPU samples, taken from the rank still working and from whatever
// else shares the cores (ranks of another job, a CI's other tests).
//
// So the barrier is MPI_Ibarrier, tested a few hundred times at first (a
// barrier the others have reached ends in microseconds) and then between
// sleeps growing to 1 ms: the wait's end is seen within a millisecond, which
// no barrier of a training run (set-up, checkpoints, the end) notices.
// Barriers carry no data, so nothing waits on this rank's progress in the
// meantime. Collectives that carry data keep Open MPI's own waits.
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <thread>

#include "mpi_check.h"

namespace tandem {

inline void idle_barrier() {
  MPI_Request request;
  mpi_check(MPI_Ibarrier(MPI_COMM_WORLD, &request), "MPI_Ibarrier");
  for (int polls = 0;; ++polls) {
    int done = 0;
    mpi_check(MPI_Test(&request, &done, MPI_STATUS_IGNORE), "MPI_Test");
    if (done) return;
    if (polls >= 200) std::this_thread::sleep_for(std::chrono::microseconds(std::min(1000, 10 * (polls - 199))));
  }
}

}  // namespace tandem
