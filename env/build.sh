#!/usr/bin/env bash
# Configures and builds tandem into build/ (extra arguments go to cmake).
# LibTorch is found as Torch_DIR / CMAKE_PREFIX_PATH, else the Python torch
# package, else the system; TANDEM_CUDA=AUTO builds the NCCL backend when the
# CUDA toolkit and NCCL are present.
set -euo pipefail
cd "$(dirname "$0")/.."

generator=()
if command -v ninja >/dev/null; then generator=(-G Ninja); fi
if [ ! -f build/CMakeCache.txt ]; then
  cmake -S . -B build "${generator[@]}" -DCMAKE_BUILD_TYPE=Release "$@"
elif [ $# -gt 0 ]; then
  cmake -S . -B build "$@"
fi
cmake --build build --parallel "${TANDEM_JOBS:-$(nproc)}"
