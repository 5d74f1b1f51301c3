#!/usr/bin/env bash
# tests/fuzz/run.sh [SECONDS] [TARGET...]: fuzzes each target (all of them by
# default) for SECONDS (default 60) on one core with libFuzzer, AddressSanitizer
# and UndefinedBehaviorSanitizer, and prints what each did. FUZZ_JOBS=N runs N
# targets at a time (default 1). A tool to run by hand, not a CI step: CI
# replays the inputs kept here (ctest -L fuzz).
#
# The clang build lives in build-fuzz/ (the first run configures and builds it,
# about 10 minutes on 2 cores); each target's corpus grows in
# build-fuzz/corpus/TARGET across runs. A crash does not stop a target
# (libFuzzer's fork mode): each input that crashed, ran out of memory or hung
# lands in build-fuzz/crashes/TARGET/, to be fixed and kept in
# tests/fuzz/regressions/TARGET/ so that CI replays it from then on.
set -euo pipefail
cd "$(dirname "$0")/../.."
source env/python.sh

all=(csv config label_sheet safetensors hf_config bpe image h5)
seconds=${1:-60}
[ $# -gt 0 ] && shift
targets=("${@:-${all[@]}}")
for t in "${targets[@]}"; do
  [[ " ${all[*]} " == *" $t "* ]] || { echo "run.sh: no fuzz target '$t' (have: ${all[*]})" >&2; exit 2; }
done
[[ $seconds =~ ^[0-9]+$ ]] || { echo "run.sh: SECONDS must be a whole number, not '$seconds'" >&2; exit 2; }

build=build-fuzz
env/setup.sh --clang
if [ ! -f $build/CMakeCache.txt ]; then
  CC=clang CXX=clang++ cmake -S . -B $build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DTANDEM_PYTHON="$TANDEM_PYTHON" -DTANDEM_FUZZ=ON -DTANDEM_CUDA=OFF
fi
cmake --build $build --parallel "${TANDEM_JOBS:-$(env -u OMP_NUM_THREADS -u OMP_THREAD_LIMIT nproc)}" \
  --target fuzz_seeds "${targets[@]/#/fuzz_}"
# LibTorch, HDF5 and MPI are not instrumented: leaks they keep until exit are
# not tandem's, and only a finding inside tandem's code should stop a target.
export ASAN_OPTIONS=detect_leaks=0:allocator_may_return_null=1
export UBSAN_OPTIONS=print_stacktrace=1
export OMP_NUM_THREADS=1
# libFuzzer calls an input a hang after 30 s (-timeout below); the walker of
# HDF5 files must call it damaged first (io/h5_guard.h).
export TANDEM_H5_STALL_S=5
$build/tests/fuzz_seeds $build/seeds jobs >/dev/null

# One target for `seconds`; its row of the table goes to logs/TARGET.row.
fuzz_one() {
  local t=$1 log=$build/logs/$1.log kept=() d
  mkdir -p $build/corpus/$t $build/crashes/$t
  for d in tests/fuzz/corpus/$t tests/fuzz/regressions/$t; do [ -d "$d" ] && kept+=("$d"); done
  local before
  before=$(ls $build/crashes/$t | wc -l)
  $build/tests/fuzz_$t $build/corpus/$t $build/seeds/$t "${kept[@]}" -max_total_time="$seconds" \
    -fork=1 -ignore_crashes=1 -ignore_ooms=1 -ignore_timeouts=1 -timeout=30 -rss_limit_mb=4096 \
    -artifact_prefix=$build/crashes/$t/ -print_final_stats=1 >"$log" 2>&1 || true
  local runs found first
  runs=$(grep -oE '^#[0-9]+' "$log" | tail -1 | tr -d '#')
  found=$(( $(ls $build/crashes/$t | wc -l) - before ))
  first=$(grep -m1 -E 'ERROR: |tandem-fuzz: |runtime error' "$log" | cut -c1-110 || true)
  echo "| $t | ${runs:-?} | $(ls $build/corpus/$t | wc -l) | $found | ${first:-} |" >$build/logs/$t.row
}

mkdir -p $build/logs
for t in "${targets[@]}"; do
  while [ "$(jobs -rp | wc -l)" -ge "${FUZZ_JOBS:-1}" ]; do wait -n || true; done
  echo "fuzz_$t: ${seconds}s"
  fuzz_one "$t" &
done
wait
echo
echo "| target | executions | corpus files | new crash inputs | first finding |"
echo "|---|---|---|---|---|"
for t in "${targets[@]}"; do cat $build/logs/$t.row; done
