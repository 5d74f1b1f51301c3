#!/usr/bin/env bash
# Configures and builds tandem into build/. `--target NAME` (repeatable)
# builds only those targets and what they need, as env/demo.sh does for
# summarize; other arguments go to cmake's configure step.
# LibTorch comes from Torch_DIR / CMAKE_PREFIX_PATH when given, else from the
# torch package of TANDEM_PYTHON: tandem's venv (env/setup.sh), or any Python
# you name (TANDEM_PYTHON=/opt/conda/bin/python env/build.sh). The NCCL
# backend is built when LibTorch has CUDA (cmake/TorchCuda.cmake).
set -euo pipefail
cd "$(dirname "$0")/.."
source env/python.sh

targets=()
configure=()
while [ $# -gt 0 ]; do
  case $1 in
    --target)
      [ $# -ge 2 ] || { echo "env/build.sh: --target needs a target name" >&2; exit 2; }
      targets+=(--target "$2")
      shift 2
      ;;
    *) configure+=("$1"); shift ;;
  esac
done

generator=()
if command -v ninja >/dev/null; then generator=(-G Ninja); fi
if [ ! -f build/CMakeCache.txt ]; then
  cmake -S . -B build "${generator[@]}" -DCMAKE_BUILD_TYPE=Release \
    -DTANDEM_PYTHON="$TANDEM_PYTHON" "${configure[@]}"
elif [ ${#configure[@]} -gt 0 ]; then
  cmake -S . -B build "${configure[@]}"
fi
# nproc alone would answer OMP_NUM_THREADS, which clusters often set to 1.
cmake --build build --parallel "${TANDEM_JOBS:-$(env -u OMP_NUM_THREADS -u OMP_THREAD_LIMIT nproc)}" "${targets[@]}"
