#!/usr/bin/env bash
# Configures and builds tandem into build/ (extra arguments go to cmake).
# LibTorch comes from Torch_DIR / CMAKE_PREFIX_PATH when given, else from the
# torch package of TANDEM_PYTHON: tandem's venv (env/setup.sh), or any Python
# you name (TANDEM_PYTHON=/opt/conda/bin/python env/build.sh). The NCCL
# backend is built when LibTorch has CUDA (cmake/TorchCuda.cmake).
set -euo pipefail
cd "$(dirname "$0")/.."
source env/python.sh

generator=()
if command -v ninja >/dev/null; then generator=(-G Ninja); fi
if [ ! -f build/CMakeCache.txt ]; then
  cmake -S . -B build "${generator[@]}" -DCMAKE_BUILD_TYPE=Release \
    -DTANDEM_PYTHON="$TANDEM_PYTHON" "$@"
elif [ $# -gt 0 ]; then
  cmake -S . -B build "$@"
fi
cmake --build build --parallel "${TANDEM_JOBS:-$(nproc)}"
