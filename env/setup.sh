#!/usr/bin/env bash
# Installs what tandem builds and runs with. Idempotent: a second run installs
# nothing. Uses sudo when not root.
#   env/setup.sh          what building and running needs
#   env/setup.sh --tests  also what only the tests use (env/test.sh passes it)
#   env/setup.sh --clang  also clang and its sanitizer runtimes (tests/fuzz/run.sh
#                         and env/sanitize.sh pass it; the flags combine)
#   env/setup.sh --bench  also the Python peers only the benches launch
#                         (Accelerate; torchvision and openpyxl for the ResNet
#                         peer; h5py to read tandem's token cache)
# Debian's packages, then a Python venv (env/python.sh says where) holding the
# pinned torch from PyPI whose LibTorch tandem builds against: the CUDA build,
# the same LibTorch a Kaggle notebook or a cluster's Python environment has,
# with the CUDA runtime and NCCL it loads. Then GPT-2's tokenizer file.
set -euo pipefail
here=$(dirname "$0")

# Pinned: the build, the tests' reference figures and the benches all assume it.
torch_pin=torch==2.15.0

packages=(
  build-essential cmake ninja-build ccache pkg-config git
  python3 python3-venv               # the venv that holds PyPI's torch (LibTorch)
  libopenmpi-dev openmpi-bin         # MPI: ranks, launch, CPU collectives
  libhdf5-dev                        # checkpoints, datasets
  libtomlplusplus-dev libcli11-dev nlohmann-json3-dev
  libgtest-dev
  gnuplot-nox                        # tandem-plot renders metrics.jsonl to PNG
  libpcre2-dev                       # GPT-2's pre-tokenization regex (apps/summarize)
  liborcus-dev                       # .xlsx label sheets (apps/carotid)
  libstb-dev                         # image decoding (PNG, JPEG, BMP) and PNG writing
  libxlsxwriter-dev                  # tests write .xlsx label sheets
  libboost-dev                       # Boost.CRC (header-only): TensorBoard records' CRC-32C
)
# Test-only: kept off users' machines, where slurm-wlm and munge would also
# start system services.
python_tests=()
python_bench=()
for flag in "$@"; do
  case $flag in
    --clang) packages+=(clang libclang-rt-dev) ;;  # libFuzzer and the sanitizers' runtimes
    --tests)
      packages+=(
        python3-h5py                 # tests check that checkpoints open in h5py
        procps                       # tests/faults find the ranks they signal with pgrep
        iproute2                     # tests/offline bring up loopback in a namespace without network
        slurm-wlm munge              # tests/slurm: a private one-node Slurm runs slurm/train.sh
        dataset-fashion-mnist        # tests/vavae: 10 classes as 10 "users" for the VA-VAE pipeline
      )
      # The reference peers the tests check tandem against, in the venv; nbclient,
      # nbformat and ipykernel run kaggle/tandem.ipynb in a real kernel (tests/kaggle);
      # scikit-learn checks carotid's calibration figures, grad-cam (with torchvision) its Grad-CAM maps;
      # pytorch-fid, clean-fid and torch-fidelity vavae's FID, KID and precision/recall.
      python_tests=(tiktoken==0.14.0 transformers==5.23.0 peft==0.21.2 rouge-score==0.1.2 numpy==2.4.6 tensorboard==2.21.0
        nbclient==0.11.0 nbformat==5.11.1 ipykernel==7.4.0 scikit-learn==1.9.1 grad-cam==1.5.7 torchvision==0.29.2
        pytorch-fid==0.3.0 clean-fid==0.1.35 torch-fidelity==0.4.0)
      ;;
    --bench) python_bench=(accelerate==1.15.0 h5py==3.16.0 torchvision==0.29.2 openpyxl==3.1.5) ;;
    *) echo "env/setup.sh: unknown flag '$flag' (have: --tests, --clang, --bench)" >&2; exit 2 ;;
  esac
done

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all ${#packages[@]} packages present"
else
  sudo=""
  if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
  echo "setup: installing ${missing[*]}"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

source "$here/python.sh"
if [ ! -x "$TANDEM_VENV/bin/python" ]; then
  echo "setup: creating the Python venv $TANDEM_VENV"
  python3 -m venv "$TANDEM_VENV"
  source "$here/python.sh"
fi
# pip is asked only for what is missing: a check by import is instant, a
# `pip install` of satisfied pins still reads the index. No wheel cache: the
# venv is made once, and a cached copy of torch's CUDA wheels would hold
# another 3 GiB of disk for nothing.
wanted=("$torch_pin" "${python_tests[@]}" "${python_bench[@]}")
absent=()
for pin in "${wanted[@]}"; do
  "$TANDEM_PYTHON" - "$pin" <<'PY' 2>/dev/null || absent+=("$pin")
import sys
from importlib.metadata import version
name, want = sys.argv[1].split("==")
sys.exit(version(name) != want)
PY
done
if [ ${#absent[@]} -gt 0 ]; then
  echo "setup: pip installing ${absent[*]} into $TANDEM_VENV (torch is about 4 GiB with CUDA)"
  "$TANDEM_PYTHON" -m pip install --quiet --no-cache-dir "${absent[@]}"
fi

# CMake 3.22, Ubuntu 22.04's and so Kaggle's: tests/kaggle configures tandem
# with it. Its own folder, off PATH, so that it never shadows the system's.
if [ ${#python_tests[@]} -gt 0 ] && [ ! -x "$TANDEM_CACHE/cmake-3.22/cmake/data/bin/cmake" ]; then
  echo "setup: pip installing cmake==3.22.6 into $TANDEM_CACHE/cmake-3.22"
  "$TANDEM_PYTHON" -m pip install --quiet --no-cache-dir --target "$TANDEM_CACHE/cmake-3.22" cmake==3.22.6
fi

# GPT-2's tokenizer file, into the user's cache (not the repository).
"$here/tokenizer.sh"
