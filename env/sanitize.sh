#!/usr/bin/env bash
# env/sanitize.sh [address|thread] [CTEST ARGS...]: builds tandem with clang
# under sanitizers and runs the tests that exercise tandem's own code there.
#   address (default): AddressSanitizer + UndefinedBehaviorSanitizer in
#     build-asan/; runs the unit, MPI and fuzz-replay tests and the short
#     end-to-end runs of every app (one per app at least), 2 ranks included.
#   thread: ThreadSanitizer in build-tsan/; builds and runs the tests whose
#     threads tandem starts: the MPI thread and its queue (the 2-rank MPI
#     tests and training runs), the watchdog, the start-up deadline, the data
#     prefetcher, the GPU monitor and the TensorBoard writer.
# CTEST ARGS replace the default selection (e.g. -R Watchdog). A tool to run
# by hand before a release, not a CI step: the builds take half an hour or more
# each on 2 cores, and LibTorch, MPI and HDF5 are not instrumented, so what is
# checked is tandem's code and how it calls them.
set -euo pipefail
cd "$(dirname "$0")/.."

kind=${1:-address}
[ $# -gt 0 ] && shift
case $kind in
  address) build=build-asan; sanitizers="address;undefined"; targets=(all) ;;
  thread) build=build-tsan; sanitizers="thread"; targets=(unit_tests mpi_tests dead_rank toy_train compare_runs) ;;
  *) echo "env/sanitize.sh: the first argument is address or thread, not '$kind'" >&2; exit 2 ;;
esac

env/setup.sh --tests --clang
source env/python.sh
if [ ! -f $build/CMakeCache.txt ]; then
  # No CUDA kernels: nothing here runs them, and nvcc does not take clang's
  # sanitizer flags. File by file, not the default unity build: each file
  # then compiles with only its own includes, so a missing one shows here.
  CC=clang CXX=clang++ cmake -S . -B $build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DTANDEM_PYTHON="$TANDEM_PYTHON" -DTANDEM_SANITIZE="$sanitizers" -DTANDEM_CUDA=OFF \
    -DCMAKE_UNITY_BUILD=OFF
fi
cmake --build $build --parallel "${TANDEM_JOBS:-$(env -u OMP_NUM_THREADS -u OMP_THREAD_LIMIT nproc)}" \
  --target "${targets[@]}"

source env/mpi_env.sh
supp=$PWD/env/sanitize
# A report stops the process with a non-zero status, so ctest counts it as a
# failure; each report is also kept in $build/reports/ for reading.
rm -rf $build/reports && mkdir -p $build/reports
log=log_path=$PWD/$build/reports/$kind
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1:$log
export ASAN_OPTIONS=halt_on_error=1:detect_stack_use_after_return=1:check_initialization_order=1:strict_init_order=1:$log
export LSAN_OPTIONS=suppressions=$supp/lsan.supp:print_suppressions=0
export TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1:suppressions=$supp/tsan.supp:$log
if [ "$kind" = thread ]; then
  # LibTorch's compute threads meet in libgomp, which is not instrumented:
  # TSan would see tandem's lambdas inside a parallel loop race without the
  # barrier between them. One compute thread leaves tandem's own threads.
  export OMP_NUM_THREADS=1
fi
if [ "$kind" = address ]; then
  cc -shared -fPIC -O2 -o $build/keep_loaded.so $supp/keep_loaded.c
  export LD_PRELOAD=$PWD/$build/keep_loaded.so
fi

selection=("$@")
if [ ${#selection[@]} -eq 0 ]; then
  if [ "$kind" = address ]; then
    # Long runs and the ones that test other programs (Slurm, Jupyter, the
    # Python peers, the fault scripts' timing) are left out.
    # envcheck_nccl_without_gpu wants the NCCL backend, which these builds
    # leave out.
    selection=(-LE 'slurm|kaggle|peers|faults|multinode' -E 'vavae_fashion_mnist_2ranks|envcheck_nccl_without_gpu')
  else
    selection=(-R 'Watchdog|StartDeadline|Prefetcher|Loader|GpuMonitor|TensorBoard|^mpi_|train_loop_(invariance|resume|preempt_one_rank)$')
  fi
fi
cd $build
status=0
ctest --output-on-failure --parallel "${TANDEM_JOBS:-$(env -u OMP_NUM_THREADS -u OMP_THREAD_LIMIT nproc)}" \
  "${selection[@]}" || status=$?
cd ..
reports=$(find $build/reports -type f | wc -l)
echo "sanitize ($kind): $reports report(s) in $build/reports"
for r in $(find $build/reports -type f | head -5); do
  echo "== $r"; grep -m3 -E 'ERROR|WARNING|runtime error|SUMMARY' "$r" || true
done
exit $status
