#!/usr/bin/env bash
# Configures and builds tandem into build/. `--target NAME` (repeatable)
# builds only those targets and what they need, as env/demo.sh does for
# summarize; other arguments go to cmake's configure step.
# LibTorch comes from Torch_DIR / CMAKE_PREFIX_PATH when given, else from the
# torch package of TANDEM_PYTHON: tandem's venv (env/setup.sh), or any Python
# you name (TANDEM_PYTHON=/opt/conda/bin/python env/build.sh). The NCCL
# backend is built when LibTorch has CUDA (cmake/TorchCuda.cmake).
# `--bundle DIR` builds with no network, no root and no package manager: every
# library but LibTorch from the offline bundle DIR (env/bundle.sh; a folder or
# its .tar.gz, opened by env/bundle_env.sh), checked first (exit 2 when it is
# not whole); tests are not built (GoogleTest is in a bundle only with
# --with-tests). The build folder is $TANDEM_BUILD, default build/.
set -euo pipefail
cd "$(dirname "$0")/.."
source env/python.sh
source env/bundle_env.sh
build=${TANDEM_BUILD:-build}

targets=()
configure=()
while [ $# -gt 0 ]; do
  case $1 in
    --target)
      [ $# -ge 2 ] || { echo "env/build.sh: --target needs a target name" >&2; exit 2; }
      targets+=(--target "$2")
      shift 2
      ;;
    --bundle)
      [ $# -ge 2 ] || { echo "env/build.sh: --bundle needs the bundle's folder or archive" >&2; exit 2; }
      tandem_bundle_open "$2" env/build.sh
      bundle=$TANDEM_BUNDLE_DIR
      configure+=(-DTANDEM_BUNDLE="$bundle" -DBUILD_TESTING=OFF)
      shift 2
      ;;
    *) configure+=("$1"); shift ;;
  esac
done

# A folder configured with the system's libraries keeps their paths in its
# cache; it is not turned into a bundle build, nor the other way round.
cached=$(sed -n 's/^TANDEM_BUNDLE:[A-Z]*=//p' "$build/CMakeCache.txt" 2>/dev/null || true)
if [ -f "$build/CMakeCache.txt" ] && [ "$cached" != "${bundle:-}" ]; then
  system="with this machine's libraries"
  was=$system now=$system
  [ -n "$cached" ] && was="with the bundle $cached"
  [ -n "${bundle:-}" ] && now="with the bundle $bundle"
  echo "env/build.sh: $build was configured $was, not $now: set TANDEM_BUILD to another folder or remove $build" >&2
  exit 2
fi
generator=()
if command -v ninja >/dev/null; then generator=(-G Ninja); fi
if [ ! -f "$build/CMakeCache.txt" ]; then
  cmake -S . -B "$build" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release \
    -DTANDEM_PYTHON="$TANDEM_PYTHON" "${configure[@]}"
elif [ ${#configure[@]} -gt 0 ]; then
  cmake -S . -B "$build" "${configure[@]}"
fi
# nproc alone would answer OMP_NUM_THREADS, which clusters often set to 1.
cmake --build "$build" --parallel "${TANDEM_JOBS:-$(env -u OMP_NUM_THREADS -u OMP_THREAD_LIMIT nproc)}" "${targets[@]}"
