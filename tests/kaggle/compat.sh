#!/bin/bash
# Kaggle's toolchain, as far as this Debian 12 machine can stand in for it:
# tandem configured with CMake 3.22 and built with GCC 11 against PyPI's torch
# 2.10 (the Kaggle image's), Debian's HDF5 1.10 and Open MPI 4.1; then
# envcheck --test and a 5-step summarize run on 2 ranks. Not in CI (torch
# 2.10 with its CUDA libraries is a 3 GB install, and the build alone takes
# longer than CI's test budget); CI configures with CMake 3.22
# (kaggle_cmake-3.22). The result is recorded in kaggle/README.md.
#
#   tests/kaggle/compat.sh [WORK]    WORK: default ~/.cache/tandem/kaggle-compat
#
# What stands for what (kaggle/README.md says where each Kaggle figure comes
# from):
#   torch      PyPI's torch==$KAGGLE_TORCH (2.10.0), into WORK/venv
#   CMake      PyPI's cmake==$KAGGLE_CMAKE (3.22.6, the last 3.22; Ubuntu
#              22.04's is 3.22.1), into the same venv
#   GCC        Debian's g++-$KAGGLE_GCC (11), installed when missing
#   HDF5, MPI  Debian 12's libhdf5-dev 1.10.8 and Open MPI 4.1.4 (Ubuntu
#              22.04: 1.10.7 and 4.1.2), what env/setup.sh installs
# A CUDA torch whose CUDA major differs from this machine's toolkit's is
# built with TANDEM_CUDA=OFF (one process cannot hold two CUDA runtimes,
# cmake/TorchCuda.cmake), which the summary says.
# Exit status: 0 when every step passed, 1 when one failed (its log named).
set -uo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
work=${1:-${XDG_CACHE_HOME:-$HOME/.cache}/tandem/kaggle-compat}
torch_version=${KAGGLE_TORCH:-2.10.0}
cmake_version=${KAGGLE_CMAKE:-3.22.6}
gcc_version=${KAGGLE_GCC:-11}
mkdir -p "$work"
work=$(cd "$work" && pwd)
venv=$work/venv
build=$work/build
summary=()
failed=0

# step NAME COMMAND...: runs COMMAND with its output in WORK/NAME.log and
# records how it went; the later steps need the earlier ones, so a failure
# ends the script.
step() {
  local name=$1 started=$SECONDS status
  shift
  echo "compat: $name ..."
  "$@" >"$work/$name.log" 2>&1
  status=$?
  summary+=("$(printf '%-10s %-4s %4d s  %s' "$name" "$([ $status -eq 0 ] && echo ok || echo FAIL)" \
    $((SECONDS - started)) "$work/$name.log")")
  if [ $status -ne 0 ]; then
    tail -n 30 "$work/$name.log"
    failed=1
    report
  fi
}

report() {
  echo
  echo "compat: tandem $(git -C "$repo" rev-parse --short HEAD 2>/dev/null) with Kaggle's toolchain, on $(. /etc/os-release && echo "$PRETTY_NAME")"
  [ -f "$work/versions.log" ] && sed 's/^/  /' "$work/versions.log"
  grep -h 'TANDEM_CUDA=OFF' "$work/configure.log" 2>/dev/null | sed 's/^/  /'
  printf '  %s\n' "${summary[@]}"
  if [ $failed -eq 0 ]; then echo "compat: PASS"; else echo "compat: FAIL"; fi
  exit $failed
}

toolchain() {
  if ! command -v "g++-$gcc_version" >/dev/null; then
    local sudo=
    [ "$(id -u)" -ne 0 ] && sudo=sudo
    $sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "g++-$gcc_version" || return 1
  fi
  "$repo/env/setup.sh" || return 1
  [ -x "$venv/bin/python" ] || python3 -m venv "$venv" || return 1
  "$venv/bin/pip" install -q "torch==$torch_version" "cmake==$cmake_version" numpy
}

versions() {
  echo "g++        $("g++-$gcc_version" -dumpfullversion)"
  echo "cmake      $("$venv/bin/cmake" --version | head -n 1 | awk '{print $3}')"
  "$venv/bin/python" -c 'import torch; print(f"torch      {torch.__version__} (CUDA {torch.version.cuda})")'
  echo "hdf5       $(dpkg-query -W -f='${Version}' libhdf5-dev)"
  echo "open mpi   $(dpkg-query -W -f='${Version}' libopenmpi-dev)"
  echo "python     $("$venv/bin/python" -c 'import platform; print(platform.python_version())')"
  if command -v nvcc >/dev/null; then echo "nvcc       $(nvcc --version | sed -n 's/.*release \([0-9.]*\).*/\1/p')"; fi
}

configure() {
  local torch_cuda toolkit cuda=()
  torch_cuda=$("$venv/bin/python" -c 'import torch; print((torch.version.cuda or "").split(".")[0])')
  toolkit=$(nvcc --version 2>/dev/null | sed -n 's/.*release \([0-9]*\)\..*/\1/p')
  if [ -n "$torch_cuda" ] && [ "$torch_cuda" != "$toolkit" ]; then
    echo "torch is built for CUDA $torch_cuda and this machine's toolkit is CUDA ${toolkit:-none}: TANDEM_CUDA=OFF"
    cuda=(-DTANDEM_CUDA=OFF)
  fi
  rm -rf "$build"
  CC=gcc-$gcc_version CXX=g++-$gcc_version "$venv/bin/cmake" -S "$repo" -B "$build" -G Ninja \
    -DCMAKE_BUILD_TYPE=Release -DBUILD_TESTING=OFF -DTANDEM_PYTHON="$venv/bin/python" "${cuda[@]}"
}

build_apps() {
  local apps
  apps=$(source "$repo/env/launch_lib.sh" && launch_app_names | xargs)
  # shellcheck disable=SC2086  # one --target per app
  "$venv/bin/cmake" --build "$build" --parallel "$(nproc)" $(printf -- '--target %s ' $apps)
}

run_envcheck() {
  source "$repo/env/mpi_env.sh"
  mpirun -np 2 --bind-to none "$build/apps/envcheck" --test --set envcheck.max_mb=1 --set envcheck.iters=2
}

run_summarize() {
  source "$repo/env/mpi_env.sh"
  rm -rf "$work/run"
  (cd "$repo" && mpirun -np 2 --bind-to none "$build/apps/summarize" --config jobs/summarize-tiny.toml \
    --set train.max_steps=5 --set train.warmup_steps=1 --set gen.max_new_tokens=8 \
    --set train.out_dir="$work/run" --set data.cache_dir="$work/token-cache") &&
    [ -f "$work/run/submission.csv" ]
}

step toolchain toolchain
versions >"$work/versions.log" 2>&1
step configure configure
step build build_apps
step envcheck run_envcheck
step summarize run_summarize
report
