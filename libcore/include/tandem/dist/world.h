#pragma once
// The MPI job as this process sees it: who am I, how many of us, who shares my
// node. MPI is the launcher-agnostic way to learn this: the same binary runs
// alone, under `mpirun -np N`, and under `srun --mpi=pmix`.
#include <cstddef>
#include <cstdlib>
#include <functional>
#include <memory>
#include <string>

#include "tandem/dist/mpi_thread.h"
#include "tandem/dist/watchdog.h"

namespace tandem {

class World {
 public:
  // Calls MPI_Init_thread under TANDEM_START_TIMEOUT_S; starts the MPI
  // thread and the watchdog.
  World(int& argc, char**& argv);
  // Stops the threads, then MPI_Finalize under the watchdog's timeout.
  ~World();
  World(const World&) = delete;
  World& operator=(const World&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }
  // Rank among the processes on this node, from MPI_COMM_TYPE_SHARED: it is
  // what maps a rank to a GPU, whatever the launcher called it.
  int local_rank() const { return local_rank_; }
  int local_size() const { return local_size_; }
  int node_count() const { return node_count_; }
  const std::string& host() const { return host_; }
  bool is_main() const { return rank_ == 0; }
  // MPI_Get_library_version's first line: "Open MPI v4.1.4, ...".
  const std::string& mpi_library() const { return mpi_library_; }

  MpiThread& mpi() { return *mpi_; }
  Watchdog& watchdog() { return *watchdog_; }

  // Runs `job` (which makes MPI calls) on the MPI thread under the watchdog's
  // eye; `then` runs on the thread that waits for the result. `setup`: held
  // to dist.setup_timeout_s instead of dist.timeout_s.
  WorkHandle submit(std::string what, std::function<void()> job, std::function<void()> then = {},
                    bool setup = false);

  // The job's limits from its config (dist.timeout_s, dist.setup_timeout_s):
  // run_command applies them before any command runs. Until then both are
  // 600 s.
  void set_limits(double timeout_s, double setup_timeout_s);

  // A barrier after one-sided set-up work (rank 0 tokenizing a corpus,
  // merging latents, writing a report): the ranks that arrive first wait up
  // to dist.setup_timeout_s, not dist.timeout_s, which a collective of the
  // run is held to; a rank that never arrives still ends the job. Every rank
  // logs what it waits for.
  void setup_barrier(const std::string& what);

  // Small host-side exchanges (ids, flags, seeds), done through submit().
  void broadcast_bytes(void* data, size_t bytes, int root);
  // `out` holds size() blocks of `bytes`, rank r's at block r.
  void allgather_bytes(const void* in, size_t bytes, void* out);
  void barrier();
  // True on every rank when `flag` is true on any: how ranks agree to stop.
  bool any(bool flag);

 private:
  int rank_ = 0, size_ = 1, local_rank_ = 0, local_size_ = 1, node_count_ = 1;
  std::string host_;
  std::string mpi_library_;
  double setup_timeout_s_ = 600;
  std::unique_ptr<MpiThread> mpi_;
  std::unique_ptr<Watchdog> watchdog_;
};

// Why a 1-rank world contradicts its launcher, or "" when it does not. srun
// with an MPI built without PMIx/PMI support starts N tasks that each
// initialise as rank 0 of a world of one: N copies training alone, on GPU 0,
// into the same folder. The launcher's own counts give it away: Slurm's
// SLURM_STEP_NUM_TASKS (set for srun's tasks; a batch script's SLURM_NTASKS
// describes the whole job, so a program started alone in it must not be
// refused), Open MPI's OMPI_COMM_WORLD_SIZE, PMI's PMI_SIZE; the first of
// OMPI_COMM_WORLD_SIZE, PMI_SIZE, SLURM_STEP_NUM_TASKS that is set decides.
// `env` reads the environment.
std::string launcher_disagrees(int mpi_size, const std::function<const char*(const char*)>& env = std::getenv);

}  // namespace tandem
