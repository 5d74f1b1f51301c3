#!/usr/bin/env bash
# tests/fuzz/run.sh [SECONDS] [TARGET...]: fuzzes each target (all of them by
# default) for SECONDS (default 60) on one core with libFuzzer, AddressSanitizer
# and UndefinedBehaviorSanitizer, and prints what each did. A tool to run by
# hand, not a CI step: CI replays the inputs kept here (ctest -L fuzz).
#
# The clang build lives in build-fuzz/ (the first run configures and builds it,
# about 10 minutes on 2 cores); each target's corpus grows in
# build-fuzz/corpus/TARGET across runs. A crash stops that target: its input
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
$build/tests/fuzz_seeds $build/seeds jobs >/dev/null

results=()
for t in "${targets[@]}"; do
  mkdir -p $build/corpus/$t $build/crashes/$t $build/logs
  kept=()
  for d in tests/fuzz/corpus/$t tests/fuzz/regressions/$t; do [ -d "$d" ] && kept+=("$d"); done
  log=$build/logs/$t.log
  echo "fuzz_$t: ${seconds}s"
  status=0
  $build/tests/fuzz_$t $build/corpus/$t $build/seeds/$t "${kept[@]}" -max_total_time="$seconds" \
    -timeout=30 -rss_limit_mb=4096 -artifact_prefix=$build/crashes/$t/ -print_final_stats=1 \
    >"$log" 2>&1 || status=$?
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  found=no
  if [ $status -ne 0 ]; then
    found="yes: $(grep -m1 -E 'ERROR: |tandem-fuzz: |runtime error' "$log" | cut -c1-120) ($log)"
  fi
  results+=("| $t | ${runs:-?} | $(ls $build/corpus/$t | wc -l) | $found |")
done
echo
echo "| target | executions | corpus files | crash |"
echo "|---|---|---|---|"
printf '%s\n' "${results[@]}"
