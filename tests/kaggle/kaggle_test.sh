#!/bin/bash
# kaggle/run.sh as a notebook cell runs it, on this machine: a fake
# nvidia-smi stands for Kaggle's two T4s (or for a machine without GPUs).
#
#   tests/kaggle/kaggle_test.sh CASE REPO BUILD
#     dry-run-t4x2     --dry-run --monitor with two T4s: NCCL settings, fp16, mpirun -np 2, the check
#                      before the job (and none with --no-check); nothing built; nvcc put on PATH
#                      from CUDA_HOME;
#                      /dev/shm as found, and under 1 GiB (a container's 64 MB) NCCL_SHM_DISABLE=1 and
#                      Open MPI's segments in /tmp
#     dry-run-cpu      --dry-run without GPUs: mpirun -np 1 on the CPU
#     dry-run-one-gpu  CUDA_VISIBLE_DEVICES=1 of two T4s: -np 1, that GPU
#     run-cpu          a real 5-step summarize run on the CPU through BUILD (no build step)
#     run-monitor      a real 3-step run with the fake T4s and --monitor: GPU lines
#                      while it runs, the monitor stopped at the end
#     interrupt        SIGINT mid-run (the notebook's interrupt): checkpoint, status 75;
#                      the same command again resumes and finishes
#     interrupt-before-launch  SIGINT while run.sh probes the GPUs: nothing starts, status 75
#     build-notebook   a fresh copy of the repository built by run.sh itself against
#                      "the notebook's" torch (TANDEM_PYTHON: tandem's venv), with
#                      the fake T4s: CUDA LibTorch, NCCL backend, then a short run
#     missing-libs     a kept build whose system libraries a new session lacks (a
#                      fake ldd and apt-get whose update fails, as a broken
#                      third-party source makes it): run.sh warns, installs
#                      them, then runs
#     cmake-3.22       the repository configured with CMake 3.22 (Ubuntu 22.04's,
#                      so Kaggle's; env/setup.sh --tests installs it off PATH)
#     check-fails      two ranks whose check before the job fails (an envcheck
#                      that finds a wrong allreduce): its status, its output,
#                      the job not started
set -uo pipefail
case_name=${1:?usage: kaggle_test.sh CASE REPO BUILD}
repo=$(cd "${2:?REPO}" && pwd)
build=$(cd "${3:?BUILD}" && pwd)

tmp=$(mktemp -d /tmp/tandem-kaggle.XXXXXX)
# shellcheck source=tests/lib/harness.sh
source "$repo/tests/lib/harness.sh"
harness_label=$case_name
finish() {
  local status=$?
  # A monitor the script failed to stop: the fake records its pid.
  if [ -f "$tmp/fake/monitor.pid" ]; then
    local pid
    pid=$(cat "$tmp/fake/monitor.pid")
    if kill -0 "$pid" 2>/dev/null; then
      echo "FAIL: the GPU monitor (pid $pid) is still running after run.sh ended"
      kill "$pid"
      status=1
    fi
  fi
  harness_finish $status
}
trap finish EXIT

# fake nvidia-smi: FAKE_GPUS=2 lists two T4s, 0 answers as a machine without GPUs.
# With FAKE_INTERRUPT_PROBE=1, run.sh's GPU probe sends the cell (as_a_cell
# below) SIGINT, once.
mkdir -p "$tmp/fake" "$tmp/work"
cat >"$tmp/fake/nvidia-smi" <<EOF
#!/bin/bash
if [ "\${FAKE_INTERRUPT_PROBE:-0}" = 1 ] && [[ "\$*" == *--query-gpu=index* ]] && [ ! -e "$tmp/fake/interrupted" ]; then
  touch "$tmp/fake/interrupted"
  kill -INT "\$TEST_CELL_PID"
fi
if [ "\${FAKE_GPUS:-0}" -eq 0 ]; then
  echo "No devices were found"
  exit 6
fi
case "\$*" in
  *--query-gpu=timestamp*)
    echo \$\$ >"$tmp/fake/monitor.pid"
    while :; do
      for i in \$(seq 0 \$((FAKE_GPUS - 1))); do
        echo "\$(date '+%Y/%m/%d %H:%M:%S.000'), \$i, 97 %, 9000 MiB, 15360 MiB, 71"
      done
      sleep 1
    done ;;
  *--query-gpu=*)
    for i in \$(seq 0 \$((FAKE_GPUS - 1))); do echo "\$i, Tesla T4, 15360 MiB, 7.5"; done ;;
  *) echo "fake nvidia-smi" ;;
esac
EOF
chmod +x "$tmp/fake/nvidia-smi"
export PATH=$tmp/fake:$PATH
unset CUDA_VISIBLE_DEVICES NCCL_P2P_DISABLE NCCL_IB_DISABLE OMP_NUM_THREADS
cd "$tmp/work" || exit 1

run() { # run NAME COMMAND...: output to $tmp/NAME.out ($out), status to $status
  local name=$1
  shift
  "$@" >"$tmp/$name.out" 2>&1
  status=$?
  # Per-step lines and ninja's per-object lines are left out, so that what
  # went wrong stays in the part of the output CI reports.
  sed 's/^/    | /' "$tmp/$name.out" | grep -Ev '^    \| ((train|generate) [0-9]|\[[0-9]+/[0-9]+\] )'
  out=$tmp/$name.out
}
expect() { # expect REGEX...: lines of the last output
  local r
  for r in "$@"; do
    if grep -Eq -- "$r" "$out"; then echo "  ok: $(grep -Em1 -- "$r" "$out")"; else fail "no line matches: $r"; fi
  done
}
expect_not() {
  if grep -Eq -- "$1" "$out"; then fail "a line matches: $1"; else echo "  ok: no line matches: $1"; fi
}
expect_status() {
  if [ "$status" -eq "$1" ]; then echo "  ok: status $status"; else fail "status $status, wanted $1"; fi
}
empty_build=$tmp/no-build
# "${as_a_cell[@]}" COMMAND...: COMMAND with SIGINT at its default, in this
# process (so $! of a background one is COMMAND's pid, as is TEST_CELL_PID).
# A background job of a script starts with SIGINT ignored (and a shell cannot
# trap what it inherits ignored); a notebook's `!` does not do that.
as_a_cell=(python3 -c 'import os, signal, sys
signal.signal(signal.SIGINT, signal.SIG_DFL)
os.environ["TEST_CELL_PID"] = str(os.getpid())
os.execvp(sys.argv[1], sys.argv[1:])')
# Open MPI's flag for root: run.sh adds it only as root.
root=
[ "$(id -u)" -eq 0 ] && root="--allow-run-as-root "

case $case_name in
  dry-run-t4x2)
    FAKE_GPUS=2 TANDEM_BUILD=$empty_build run dry "$repo/kaggle/run.sh" --dry-run --monitor summarize
    expect_status 0
    expect "GPUs: 2" "Tesla T4" "NCCL_P2P_DISABLE=1" "NCCL_IB_DISABLE=1" "fp16" \
      "monitor: nvidia-smi --query-gpu=timestamp,index,utilization.gpu,memory.used,memory.total,temperature.gpu" \
      "check first: mpirun ${root}-np 2 .*$empty_build/apps/envcheck --test .*--no-check skips it" \
      "command: mpirun ${root}-np 2 .*$empty_build/apps/summarize$" "dry run: nothing built or run"
    if [ -e "$empty_build" ]; then fail "the dry run created $empty_build"; fi
    FAKE_GPUS=2 TANDEM_BUILD=$empty_build run dry-no-check "$repo/kaggle/run.sh" --dry-run --no-check summarize
    expect "check first: none \(--no-check\)"
    echo "  nvcc off PATH, CUDA_HOME set (Kaggle's image): its bin/ goes on PATH"
    mkdir -p "$tmp/cuda/bin" && printf '#!/bin/sh\necho fake nvcc\n' >"$tmp/cuda/bin/nvcc" && chmod +x "$tmp/cuda/bin/nvcc"
    no_nvcc_path=$(tr : '\n' <<<"$PATH" | while read -r d; do [ -x "$d/nvcc" ] || echo "$d"; done | paste -sd:)
    PATH=$no_nvcc_path CUDA_HOME=$tmp/cuda FAKE_GPUS=2 TANDEM_BUILD=$empty_build run dry-cuda-home \
      "$repo/kaggle/run.sh" --dry-run summarize
    expect "nvcc: $tmp/cuda/bin/nvcc \(from CUDA_HOME, put on PATH\)"
    # This machine's /dev/shm is GBs: NCCL keeps its shared memory.
    expect "shared memory: /dev/shm: [0-9]+ MB$"
    expect_not "NCCL_SHM_DISABLE"
    echo "  the same in a container's 64 MB of /dev/shm (a df in front says so)"
    mkdir -p "$tmp/shm64"
    printf '#!/bin/bash
printf "Filesystem 1024-blocks Used Available Capacity Mounted on\nshm 65536 0 65536 0%%%% /dev/shm\n"
' \
      >"$tmp/shm64/df"
    chmod +x "$tmp/shm64/df"
    PATH=$tmp/shm64:$PATH FAKE_GPUS=2 TANDEM_BUILD=$empty_build run dry-shm "$repo/kaggle/run.sh" --dry-run summarize
    expect_status 0
    expect "shared memory: /dev/shm: 64 MB, under the 1024 MB NCCL's shared memory wants: NCCL over sockets" \
      "^    NCCL_SHM_DISABLE=1$" "^    OMPI_MCA_btl_vader_backing_directory=/tmp$"
    echo "  the same with the user's own NCCL_P2P_DISABLE=0 kept"
    NCCL_P2P_DISABLE=0 FAKE_GPUS=2 run dry2 "$repo/kaggle/run.sh" summarize --dry-run jobs/summarize-tiny.toml
    expect "NCCL_P2P_DISABLE=0" "NCCL_IB_DISABLE=1" \
      "command: mpirun ${root}-np 2 .* --config $repo/jobs/summarize-tiny.toml$"
    ;;
  dry-run-cpu)
    FAKE_GPUS=0 TANDEM_BUILD=$empty_build run dry "$repo/kaggle/run.sh" --dry-run summarize
    expect_status 0
    expect "GPUs: none" "ranks: 1 on the CPU" "NCCL_P2P_DISABLE=1" "NCCL_IB_DISABLE=1" \
      "command: mpirun ${root}-np 1 "
    if [ -e "$empty_build" ]; then fail "the dry run created $empty_build"; fi
    ;;
  dry-run-one-gpu)
    CUDA_VISIBLE_DEVICES=1 FAKE_GPUS=2 run dry "$repo/kaggle/run.sh" --dry-run summarize
    expect_status 0
    expect "GPUs: 1 \(CUDA_VISIBLE_DEVICES=1\)" "^ +1, Tesla T4" "command: mpirun ${root}-np 1 "
    ;;
  run-cpu)
    FAKE_GPUS=0 TANDEM_BUILD=$build run real "$repo/kaggle/run.sh" summarize jobs/summarize-tiny.toml \
      --set train.max_steps=5 --set train.warmup_steps=1 --set gen.max_new_tokens=8 \
      --set train.out_dir="$tmp/work/run" --set data.cache_dir="$tmp/token-cache"
    expect_status 0
    expect "command: mpirun ${root}-np 1 " "training on 1 rank\(s\), cpu" "done: 5 steps" \
      "submission: 100 rows" "kaggle/run.sh: done"
    expect_not "configuring|building summarize"
    if [ ! -f "$tmp/work/run/submission.csv" ]; then fail "no submission.csv in $tmp/work/run"; fi
    ;;
  run-monitor)
    FAKE_GPUS=2 TANDEM_MONITOR_S=1 TANDEM_BUILD=$build run real "$repo/kaggle/run.sh" --monitor summarize \
      train jobs/summarize-tiny.toml --set train.max_steps=3 --set train.warmup_steps=1 \
      --set train.out_dir="$tmp/work/run" --set data.cache_dir="$tmp/token-cache"
    expect_status 0
    expect "checking the 2 ranks first: envcheck --test" "check passed: every collective right on 2 ranks" \
      "command: mpirun ${root}-np 2 " "training on 2 rank\(s\)" \
      "^\[gpu\] .*, 0, 97 %, 9000 MiB, 15360 MiB, 71" "^\[gpu\] .*, 1, 97 %" "done: 3 steps"
    sleep 1.5 # a monitor left running would still be printing
    ;;
  interrupt)
    # SIGINT to run.sh (the notebook's interrupt) mid-run: checkpoint, status 75;
    # the same command again continues from there.
    cmd=("$repo/kaggle/run.sh" summarize train jobs/summarize-tiny.toml --set train.max_steps=20
      --set train.warmup_steps=1 --set train.out_dir="$tmp/work/run" --set data.cache_dir="$tmp/token-cache")
    FAKE_GPUS=0 TANDEM_BUILD=$build "${as_a_cell[@]}" "${cmd[@]}" >"$tmp/first.out" 2>&1 &
    pid=$!
    for _ in $(seq 600); do
      [ "$(grep -c '"loss"' "$tmp/work/run/metrics.jsonl" 2>/dev/null)" -ge 2 ] && break
      kill -0 $pid 2>/dev/null || break
      sleep 0.2
    done
    kill -INT $pid
    wait $pid
    status=$?
    out=$tmp/first.out
    sed 's/^/    | /' "$out" | grep -Ev '^    \| (train|generate) [0-9]'
    expect_status 75
    expect "interrupted: the ranks checkpoint and stop" "checkpointing at step [0-9]+ and exiting with status 75" \
      "stopped after a checkpoint \(status 75\): run the same cell again"
    FAKE_GPUS=0 TANDEM_BUILD=$build run again "${cmd[@]}"
    expect_status 0
    expect "resumed from .*checkpoints/step-[0-9]+\.h5 at step [1-9]" "done: 20 steps"
    ;;
  interrupt-before-launch)
    # The notebook's interrupt while run.sh probes the GPUs (the fake
    # nvidia-smi sends it): the ranks never start, status 75.
    FAKE_INTERRUPT_PROBE=1 FAKE_GPUS=2 TANDEM_BUILD=$build run first "${as_a_cell[@]}" "$repo/kaggle/run.sh" summarize train \
      jobs/summarize-tiny.toml --set train.max_steps=3 --set train.out_dir="$tmp/work/run" \
      --set data.cache_dir="$tmp/token-cache"
    expect_status 75
    [ -e "$tmp/fake/interrupted" ] || fail "the fake nvidia-smi sent no SIGINT"
    expect "received SIGINT before the job started: not starting it" \
      "stopped by SIGINT before the job started: nothing ran \(status 75\)" \
      "interrupted before the job started \(status 75\): run the same cell again to start it" \
      "command: mpirun ${root}-np 2 "
    expect_not "training on|done: [0-9]+ steps|checkpointing"
    if [ -e "$tmp/work/run" ]; then fail "a rank ran: $tmp/work/run exists"; fi
    ;;
  build-notebook)
    # A copy laid out as the checkout is (build/ inside it), so ccache, whose
    # paths are relative to the source folder, reuses the CI build's objects.
    python=${TANDEM_TEST_PYTHON:?the Python whose torch stands for the notebook}
    mkdir -p "$tmp/repo"
    (cd "$repo" && git ls-files -z --cached --others --exclude-standard | xargs -0 cp --parents -t "$tmp/repo")
    FAKE_GPUS=2 TANDEM_PYTHON=$python run real "$tmp/repo/kaggle/run.sh" --no-check summarize jobs/summarize-tiny.toml \
      --set train.max_steps=3 --set train.warmup_steps=1 --set gen.max_new_tokens=4 \
      --set train.out_dir="$tmp/work/run" --set data.cache_dir="$tmp/token-cache"
    expect_status 0
    expect "GPUs: 2" "to build, with LibTorch from the Python torch package, torch 2\." \
      "configuring $tmp/repo/build" "LibTorch +2\.[0-9.]+ from python \($python\).*CUDA: ON" \
      "NCCL backend built" "building summarize" "command: mpirun ${root}-np 2 " \
      "training on 2 rank\(s\), cpu" "done: 3 steps" "kaggle/run.sh: done"
    # ldd's output is taken whole first: under pipefail, grep -q quitting at
    # the first match can kill ldd with SIGPIPE and fail the pipeline.
    libs=$(ldd "$tmp/repo/build/apps/summarize")
    if grep -q "libtorch_cuda.so => /" <<<"$libs"; then
      echo "  ok: the program links libtorch_cuda"
    else
      fail "ldd $tmp/repo/build/apps/summarize shows no libtorch_cuda"
    fi
    ;;
  missing-libs)
    # The kept build is BUILD's; a fake ldd reports libhdf5 missing until the
    # fake apt-get has "installed" it, as in a notebook's new session.
    cat >"$tmp/fake/ldd" <<EOF
#!/bin/bash
if [ -f "$tmp/fake/installed" ]; then exec /usr/bin/ldd "\$@"; fi
/usr/bin/ldd "\$@" | grep -v libhdf5
echo "	libhdf5_serial.so.103 => not found"
EOF
    # Its update fails as one broken third-party source in the image makes it.
    cat >"$tmp/fake/apt-get" <<EOF
#!/bin/bash
echo "apt-get \$*" >>"$tmp/fake/apt.log"
case "\$*" in
  *update*) echo "E: The repository 'https://broken.example jammy Release' does not have a Release file." >&2; exit 100 ;;
  *install*) touch "$tmp/fake/installed" ;;
esac
EOF
    cat >"$tmp/fake/dpkg-query" <<EOF
#!/bin/bash
[ -f "$tmp/fake/installed" ] && echo "install ok installed"
exit 0
EOF
    cat >"$tmp/fake/apt-cache" <<EOF
#!/bin/bash
echo "  Candidate: 1.0"
EOF
    chmod +x "$tmp/fake/ldd" "$tmp/fake/apt-get" "$tmp/fake/dpkg-query" "$tmp/fake/apt-cache"
    FAKE_GPUS=0 TANDEM_BUILD=$build run real "$repo/kaggle/run.sh" summarize train jobs/summarize-tiny.toml \
      --set train.max_steps=2 --set train.warmup_steps=1 \
      --set train.out_dir="$tmp/work/run" --set data.cache_dir="$tmp/token-cache"
    expect_status 0
    expect "cannot find libhdf5_serial.so.103: installing the system libraries again" \
      "warning: apt-get update failed" "installing .*libhdf5-dev" "done: 2 steps" "kaggle/run.sh: done"
    expect_not "configuring|building summarize"
    ;;
  cmake-3.22)
    cmake_322=$(source "$repo/env/python.sh" && echo "$TANDEM_CACHE/cmake-3.22/cmake/data/bin/cmake")
    if [ ! -x "$cmake_322" ]; then
      echo "SKIP: no $cmake_322 (env/setup.sh --tests installs it)"
      exit 77
    fi
    python=${TANDEM_TEST_PYTHON:?the Python whose torch the build uses}
    gen=()
    command -v ninja >/dev/null && gen=(-G Ninja)
    run configure "$cmake_322" -S "$repo" -B "$tmp/cmake-3.22" "${gen[@]}" -DCMAKE_BUILD_TYPE=Release \
      -DBUILD_TESTING=OFF -DTANDEM_PYTHON="$python"
    expect_status 0
    expect "^-- The CXX compiler identification" "LibTorch +2\.[0-9.]+ from python" "^-- Generating done" \
      "^-- Build files have been written to: $tmp/cmake-3.22"
    grep -q '^CMAKE_COMMAND:INTERNAL=.*cmake-3.22/' "$tmp/cmake-3.22/CMakeCache.txt" ||
      fail "the build folder was not configured by CMake 3.22"
    ;;
  check-fails)
    # BUILD's summarize beside an envcheck that finds a wrong result.
    mkdir -p "$tmp/check-build/apps"
    ln -s "$build/apps/summarize" "$tmp/check-build/apps/summarize"
    printf '#!/bin/bash\necho "allreduce sum f16 1024 elements: rank 1 got 3, expected 2"\nexit 1\n' \
      >"$tmp/check-build/apps/envcheck"
    chmod +x "$tmp/check-build/apps/envcheck"
    FAKE_GPUS=2 TANDEM_BUILD=$tmp/check-build run real "$repo/kaggle/run.sh" summarize jobs/summarize-tiny.toml \
      --set train.out_dir="$tmp/work/run" --set data.cache_dir="$tmp/token-cache"
    expect_status 1
    expect "allreduce sum f16 1024 elements: rank 1 got 3, expected 2" \
      "the check on 2 ranks failed \(status 1; .*\): the job would fail the same way, so it was not started. --no-check"
    expect_not "training on|kaggle/run.sh: done"
    if [ -e "$tmp/work/run" ]; then fail "the job ran: $tmp/work/run exists"; fi
    ;;
  *)
    echo "unknown case $case_name"
    exit 2
    ;;
esac
