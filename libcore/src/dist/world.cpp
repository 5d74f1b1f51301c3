#include "tandem/dist/world.h"

#include <mpi.h>
#include <unistd.h>

#include <ATen/Parallel.h>

#include <algorithm>
#include <cstdlib>
#include <stdexcept>
#include <thread>

#include "future_work.h"
#include "idle_barrier.h"
#include "mpi_check.h"
#include "tandem/dist/mpi_deadline.h"
#include "tandem/obs/log.h"
#include "tandem/text/message_text.h"

namespace tandem {
namespace {

// "host, pid N": where a deadline's message comes from.
std::string where(const std::string& host) { return host + ", pid " + std::to_string(getpid()); }

}  // namespace

World::World(int& argc, char**& argv) {
  // Ranks that wait in a collective make Open MPI poll at full speed; when
  // ranks share a machine's cores (a laptop, CI, several ranks per node on a
  // CPU run) that polling starves the ranks still computing. Yielding costs
  // nothing measurable on dedicated cores. A user's own setting wins.
  setenv("OMPI_MCA_mpi_yield_when_idle", "1", /*overwrite=*/0);
  // Before any CUDA allocation, which reads it once. summarize's sequence
  // lengths change from batch to batch, and fixed-size segments would
  // fragment the caching allocator into blocks that fit no later batch;
  // growable segments map more memory into the same range instead. A
  // user's own setting wins, under either of the names LibTorch reads.
  if (!std::getenv("PYTORCH_CUDA_ALLOC_CONF") && !std::getenv("PYTORCH_ALLOC_CONF"))
    setenv("PYTORCH_CUDA_ALLOC_CONF", "expandable_segments:True", /*overwrite=*/0);
  // SERIALIZED: calls come from one thread at a time (the MPI thread after
  // start-up), which Open MPI supports without the cost of THREAD_MULTIPLE.
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  host_ = host;
  // Until the watchdog at the end exists, the raw MPI calls of start-up are
  // watched by this deadline; it is met when the constructor returns.
  const double start_s = start_timeout_s(std::getenv("TANDEM_START_TIMEOUT_S"));
  const MpiDeadline deadline(start_s, "MPI start-up has not finished after " + number_text(start_s) +
                                          " s (TANDEM_START_TIMEOUT_S) on " + where(host_) +
                                          ": another rank did not start or is stopped; ending the job.");
  int provided = 0;
  mpi_check(MPI_Init_thread(&argc, &argv, MPI_THREAD_SERIALIZED, &provided), "MPI_Init_thread");
  if (provided < MPI_THREAD_SERIALIZED)
    throw std::runtime_error("the MPI library does not support MPI_THREAD_SERIALIZED");
  MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &size_);
  log::init(rank_);

  MPI_Comm local;
  mpi_check(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &local),
            "MPI_Comm_split_type");
  MPI_Comm_rank(local, &local_rank_);
  MPI_Comm_size(local, &local_size_);
  MPI_Comm_free(&local);
  int leader = local_rank_ == 0 ? 1 : 0;
  mpi_check(MPI_Allreduce(&leader, &node_count_, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD), "MPI_Allreduce");

  char library[MPI_MAX_LIBRARY_VERSION_STRING] = {};
  int len = 0;
  MPI_Get_library_version(library, &len);
  mpi_library_.assign(library, len);
  mpi_library_ = mpi_library_.substr(0, mpi_library_.find_first_of("\n,"));

  // LibTorch's default of one compute thread per core is right for one
  // process per machine; with several ranks on a node the threads would
  // oversubscribe the cores. torchrun makes the same call (OMP_NUM_THREADS=1).
  if (!std::getenv("OMP_NUM_THREADS")) {
    const int cores = static_cast<int>(std::thread::hardware_concurrency());
    at::set_num_threads(std::max(1, cores / local_size_));
  }

  mpi_ = std::make_unique<MpiThread>();
  watchdog_ = std::make_unique<Watchdog>(rank_, 600.0);
}

World::~World() {
  // The watchdog goes first: finalising must not look like a hang to it. But
  // MPI_Finalize waits for every rank, so one stopped after its last
  // collective would keep this rank, and the launcher, there for good (a
  // Slurm job would sit until its time limit): the watchdog's timeout bounds
  // it too.
  // Armed before the watchdog stops: joining its threads and the MPI thread
  // waits for whatever they are inside, which a hung device can hold.
  const double finish_s = watchdog_->timeout();
  const MpiDeadline deadline(finish_s, "MPI shut-down has not finished after " + number_text(finish_s) +
                                           " s (dist.timeout_s) on " + where(host_) + ", rank " +
                                           std::to_string(rank_) +
                                           ": another rank is stopped, or still working alone; this rank's "
                                           "work is done; ending the job.");
  watchdog_.reset();
  mpi_.reset();
  // Open MPI's MPI_Finalize lets the ranks go once each has entered it. A
  // rank that entered early (rank 1 while rank 0 writes the final model) and
  // then stopped would let rank 0 through and leave only the launcher
  // waiting, with no rank to notice. After a barrier all enter at once, and
  // one stopped on its way in keeps the others here, under the deadline.
  MPI_Barrier(MPI_COMM_WORLD);
  MPI_Finalize();
}

WorkHandle World::submit(std::string what, std::function<void()> job, std::function<void()> then, bool setup) {
  // Watched (which refuses once the watchdog has fired) before it is queued:
  // a refusal must not leave a queued job writing to what its caller frees.
  auto done = std::make_shared<std::promise<void>>();
  auto work = std::make_shared<FutureWork>(std::move(what), done->get_future(), std::move(then));
  if (setup) work->hold_to(setup_timeout_s_, "dist.setup_timeout_s");
  watchdog_->watch(work);
  // The job, and the tensors it holds, go before the result is set: a
  // finished collective keeps nothing of its tensors (MpiThread::submit).
  mpi_->submit([job = std::move(job), done]() mutable {
    try {
      {
        const std::function<void()> run = std::move(job);
        job = nullptr;
        run();
      }
      done->set_value();
    } catch (...) {
      done->set_exception(std::current_exception());
    }
  });
  return work;
}

void World::set_limits(double timeout_s, double setup_timeout_s) {
  watchdog_->set_timeout(timeout_s);
  setup_timeout_s_ = setup_timeout_s;
}

void World::setup_barrier(const std::string& what) {
  log::info("waiting up to ", number_text(setup_timeout_s_), " s (dist.setup_timeout_s) for ", what);
  submit(
      "the wait for " + what, [] { idle_barrier(); }, {}, /*setup=*/true)
      ->wait();
}

void World::broadcast_bytes(void* data, size_t bytes, int root) {
  submit("broadcast of " + std::to_string(bytes) + " bytes from rank " + std::to_string(root), [=] {
    mpi_check(MPI_Bcast(data, static_cast<int>(bytes), MPI_BYTE, root, MPI_COMM_WORLD), "MPI_Bcast");
  })->wait();
}

void World::allgather_bytes(const void* in, size_t bytes, void* out) {
  submit("allgather of " + std::to_string(bytes) + " bytes", [=] {
    mpi_check(
        MPI_Allgather(in, static_cast<int>(bytes), MPI_BYTE, out, static_cast<int>(bytes), MPI_BYTE, MPI_COMM_WORLD),
        "MPI_Allgather");
  })->wait();
}

void World::barrier() {
  submit("barrier", [] { idle_barrier(); })->wait();
}

bool World::any(bool flag) {
  int mine = flag ? 1 : 0, all = 0;
  submit("agreement (allreduce of a flag)", [&] {
    mpi_check(MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_LOR, MPI_COMM_WORLD), "MPI_Allreduce");
  })->wait();
  return all != 0;
}

std::string launcher_disagrees(int mpi_size, const std::function<const char*(const char*)>& env) {
  if (mpi_size != 1) return "";
  // The launcher nearest the process speaks: under mpirun inside an
  // allocation, Slurm's count is of mpirun's daemons, not of the ranks.
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "SLURM_STEP_NUM_TASKS"}) {
    const char* value = env(name);
    if (!value) continue;
    if (std::atoi(value) <= 1) return "";
    return std::string("the launcher started ") + value + " tasks (" + name + "=" + value +
           ") but MPI sees a world of 1: each task would train alone. Under srun, use an MPI "
           "that srun can wire up (srun --mpi=pmix, see `srun --mpi=list`), or start the job "
           "with mpirun inside the allocation (TANDEM_LAUNCHER=mpirun for slurm/train.sh)";
  }
  return "";
}

}  // namespace tandem
