#!/bin/bash
# Runs a tandem app from a Kaggle notebook cell, on "GPU T4 x2", one GPU or
# the CPU:
#
#   !bash tandem/kaggle/run.sh summarize jobs/summarize.toml \
#       --set data.train_csv=/kaggle/input/SET/train.csv --set data.test_csv=/kaggle/input/SET/test.csv
#   !bash tandem/kaggle/run.sh --dry-run summarize     # what it would do; builds and runs nothing
#   !bash tandem/kaggle/run.sh --monitor summarize jobs/summarize.toml
#
# The first call installs the missing system packages (apt-get; the notebook
# needs Internet on), builds the app once against the notebook's PyTorch
# (LibTorch, its CUDA runtime and NCCL from the Python torch package, 2.7 or
# newer) and fetches GPT-2's tokenizer for summarize (pip); later calls reuse
# all of that. A build kept from an earlier session (a persisted /kaggle/working)
# is checked with ldd first: system libraries a new session lacks are installed
# again. Then it runs one rank per GPU, `mpirun -np <GPUs>` (with
# --allow-run-as-root as root, the rule in notebooks), with NCCL_P2P_DISABLE=1 and
# NCCL_IB_DISABLE=1 (what two T4s on Kaggle need), and NCCL_SHM_DISABLE=1 where
# /dev/shm is under 1 GiB (a container's default); without a GPU, one rank on
# the CPU (one rank using every core beats two ranks splitting them). With
# more than one rank, a check comes first: `envcheck --test` on the same
# ranks (every collective in every dtype, up to 8 MiB; seconds), so that a
# transport that fails (shared memory, peer-to-peer) stops the cell before a
# long job starts, not an hour into it.
# train.precision = "auto" is fp16 with loss scaling on a T4.
#
# Arguments: APP (one of the apps listed below), then the app's: a
# bare JOB.toml becomes --config JOB.toml (looked for in the current directory,
# then in the repository), everything else goes as is. Options, anywhere:
#   --dry-run     print the environment and the exact command, then stop
#   --monitor     print each GPU's utilisation, memory and temperature every
#                 TANDEM_MONITOR_S seconds (default 10) while the job runs
#   --rebuild     build again even if the program exists
#   --np N        ranks (default: one per GPU, 1 without a GPU)
#   --no-check    no envcheck --test before the job
#   --bundle DIR|FILE.tar.gz  Internet off: build and run with the offline
#                 bundle (a dataset made from --make-bundle's output) and the
#                 notebook's torch; no apt-get, no pip. The archive, or a folder
#                 whose upload lost its links and execute bits, is unpacked
#                 once to /tmp ($TANDEM_BUNDLE_UNPACK) and checked there. Its
#                 programs are used as they are when they were built for this
#                 torch version
#   --make-bundle DIR  Internet on: install what tandem needs and write the
#                 offline bundle to DIR and DIR.tar.gz (env/bundle.sh; upload
#                 the archive as a dataset)
# Environment: TANDEM_BUILD (build directory, default: REPO/build; its
# apps/APP is used as is when present), TANDEM_PYTHON (the Python whose torch
# to build against, default: python3, the notebook's), NCCL_* (yours are kept).
#
# Interrupting the cell (SIGINT) makes the ranks checkpoint and stop; a
# second interrupt stops them at once. An interrupt before the ranks start
# (while it installs, builds or probes) runs nothing: status 75.
#
# Exit status: the app's (0 done, 1 fault, 2 bad input, 3 collective timeout,
# 75 stopped after a checkpoint: run the same cell again to continue).
set -uo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=env/launch_lib.sh
source "$repo/env/launch_lib.sh"
LAUNCH_NAME=kaggle/run.sh
# Every failure of this script is bad input or a missing dependency: status 2.
die() { launch_die 2 "$@"; }
apps=$(launch_app_names | xargs)
usage() {
  sed -n '2,/^# 75 stopped/p' "$0" | sed 's/^# \{0,1\}//'
  echo "Apps: $apps"
}

dry_run=0 monitor=0 rebuild=0 check=1 np='' app='' bundle='' make_bundle=''
rest=()
while [ $# -gt 0 ]; do
  case $1 in
    --dry-run) dry_run=1 ;;
    --monitor) monitor=1 ;;
    --rebuild) rebuild=1 ;;
    --no-check) check=0 ;;
    --np) np=${2:?--np needs a number}; shift ;;
    --np=*) np=${1#*=} ;;
    --bundle) bundle=${2:?--bundle needs a folder or a .tar.gz archive}; shift ;;
    --make-bundle) make_bundle=${2:?--make-bundle needs a folder to write}; shift ;;
    -h | --help) [ -z "$app" ] && { usage; exit 0; }; rest+=("$1") ;;
    *) if [ -z "$app" ]; then app=$1; else rest+=("$1"); fi ;;
  esac
  shift
done
[ -n "$app" ] || [ -n "$make_bundle" ] || { usage; exit 2; }
# --make-bundle starts no job: an interrupt stops it at once.
[ -n "$make_bundle" ] || launch_trap_signals INT TERM USR1
if [ -n "$app" ] && [[ " $apps " != *" $app "* ]]; then
  die "no app '$app': the apps are $apps (apps/CMakeLists.txt)"
fi
if [ -n "$bundle" ]; then
  source "$repo/env/bundle_env.sh"
  tandem_bundle_open "$bundle" kaggle/run.sh
  bundle=$TANDEM_BUNDLE_DIR
fi
[[ -z $np || $np =~ ^[1-9][0-9]*$ ]] || die "--np $np: give a positive number of ranks"

build=${TANDEM_BUILD:-$repo/build}
case $build in /*) ;; *) build=$PWD/$build ;; esac
bin=$build/apps/$app
python=${TANDEM_PYTHON:-python3}
torch_version=$("$python" -c 'import torch; print(torch.__version__)' 2>/dev/null)
# A bundle's programs, when they were built for this torch and none is built here.
if [ -n "$bundle" ] && [ ! -x "$bin" ] && [ $rebuild -eq 0 ] && [ -x "$bundle/programs/$app" ] &&
  [ -n "$torch_version" ] && [ "$(tandem_bundle_torch "$bundle")" = "$torch_version" ]; then
  bin=$bundle/programs/$app
fi

# A dry run prints the command even when its job file is elsewhere.
if [ $dry_run -eq 1 ]; then launch_job_args --no-check -- "${rest[@]}"; else launch_job_args -- "${rest[@]}"; fi

# --- packages -------------------------------------------------
sudo=
[ "$(id -u)" -ne 0 ] && sudo=sudo
apt_updated=0
apt_install() { # apt_install PKG...: those not installed and in the archive
  local missing=() avail=() p
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  if [ $apt_updated -eq 0 ]; then
    launch_say "apt-get update"
    # One broken third-party source (the image ships several) fails the
    # whole update while the distribution's lists were read: go on, and
    # let the install say whether what is needed is there.
    if ! $sudo apt-get update -qq; then
      apt_updated=failed
      launch_say "warning: apt-get update failed (above); going on with the package lists it could read"
    else
      apt_updated=1
    fi
  fi
  for p in "${missing[@]}"; do
    if apt-cache policy "$p" 2>/dev/null | sed -n 's/^ *Candidate: //p' | grep -qv '(none)'; then
      avail+=("$p")
    else
      launch_say "$p is not in this system's package archive"
    fi
  done
  [ ${#avail[@]} -eq 0 ] && return 0
  launch_say "installing ${avail[*]}"
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${avail[@]}" && return 0
  if [ "$apt_updated" = failed ]; then
    die "apt-get install ${avail[*]} failed after apt-get update failed (is the notebook's Internet on?)"
  fi
  die "apt-get install ${avail[*]} failed"
}

# A header-only library the system archive lacks (Ubuntu 22.04 has no
# toml++ package): its release from GitHub, installed under ~/.cache/tandem/deps.
deps=${XDG_CACHE_HOME:-$HOME/.cache}/tandem/deps
cmake_dep_args=()
fetch_dep() { # fetch_dep NAME PACKAGE GIT_URL TAG: -DNAME_DIR=... unless PACKAGE is installed
  local name=$1 pkg=$2 url=$3 tag=$4 config
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" && return 0
  config=$(find "$deps/$name" -name "${name}Config.cmake" 2>/dev/null | head -n 1)
  if [ -z "$config" ]; then
    launch_say "fetching $name $tag from $url"
    rm -rf "$deps/src/$name"
    git clone -q --depth 1 --branch "$tag" "$url" "$deps/src/$name" || die "git clone $url failed"
    if ! cmake -S "$deps/src/$name" -B "$deps/src/$name/build" -DCMAKE_INSTALL_PREFIX="$deps/$name" \
      -DCMAKE_BUILD_TYPE=Release -DBUILD_TESTING=OFF -DCLI11_BUILD_TESTS=OFF \
      -DCLI11_BUILD_EXAMPLES=OFF -DCLI11_BUILD_DOCS=OFF >/dev/null ||
      ! cmake --install "$deps/src/$name/build" >/dev/null; then
      die "installing $name failed"
    fi
    config=$(find "$deps/$name" -name "${name}Config.cmake" | head -n 1)
  fi
  echo "$tag" >"$deps/$name/.tandem-release"  # env/bundle.sh records it
  cmake_dep_args+=("-D${name}_DIR=$(dirname "$config")")
}

# What the build needs from the system; the runtime libraries come with them.
system_packages=(build-essential cmake ninja-build ccache pkg-config git openmpi-bin libopenmpi-dev
  libhdf5-dev libtomlplusplus-dev libcli11-dev nlohmann-json3-dev libpcre2-dev liborcus-dev libstb-dev libboost-dev)

if [ -n "$make_bundle" ]; then
  # Internet on: what a build needs, then the bundle (env/bundle.sh) of it.
  apt_install "${system_packages[@]}"
  fetch_dep tomlplusplus libtomlplusplus-dev https://github.com/marzer/tomlplusplus.git v3.4.0
  fetch_dep CLI11 libcli11-dev https://github.com/CLIUtils/CLI11.git v2.4.2
  TANDEM_DEPS=$deps "$repo/env/bundle.sh" "$make_bundle" --archive --no-install || exit $?
  launch_say "bundle written to $make_bundle and ${make_bundle%/}.tar.gz: upload the archive as a Kaggle dataset," \
    "then run with --bundle /kaggle/input/.../$(basename "${make_bundle%/}").tar.gz"
  exit 0
fi

# --- GPUs ----------------------------------------------------------------------
gpu_lines=()
gpu_note=
if ! command -v nvidia-smi >/dev/null 2>&1; then
  gpu_note="no nvidia-smi: no NVIDIA driver here"
elif ! mapfile -t gpu_lines < <(nvidia-smi --query-gpu=index,name,memory.total,compute_cap \
  --format=csv,noheader 2>/dev/null || nvidia-smi --query-gpu=index,name,memory.total \
  --format=csv,noheader 2>/dev/null); then
  gpu_lines=()
fi
# Keep the lines that are GPUs (an error message is not).
gpus_all=()
for l in "${gpu_lines[@]}"; do [[ $l =~ ^[[:space:]]*[0-9]+, ]] && gpus_all+=("$l"); done
gpus=${#gpus_all[@]}
if [ -n "${CUDA_VISIBLE_DEVICES+x}" ] && [ "$gpus" -gt 0 ]; then
  IFS=, read -ra visible <<<"$CUDA_VISIBLE_DEVICES"
  [ "${visible[0]:-}" = -1 ] && visible=()
  if [[ " ${visible[*]} " =~ ^( [0-9]+)*\ $ ]]; then
    # Indices: keep those GPUs, in CUDA's order.
    kept=()
    for i in "${visible[@]}"; do
      for l in "${gpus_all[@]}"; do [[ $l =~ ^[[:space:]]*$i, ]] && kept+=("$l"); done
    done
    gpus_all=("${kept[@]}")
    gpus=${#kept[@]}
  elif [ ${#visible[@]} -lt "$gpus" ]; then
    gpus=${#visible[@]}  # UUIDs: only the count
  fi
  gpu_note="CUDA_VISIBLE_DEVICES=$CUDA_VISIBLE_DEVICES"
fi
[ "$gpus" -eq 0 ] && [ -z "$gpu_note" ] && gpu_note="nvidia-smi lists no GPU"
np=${np:-$((gpus > 0 ? gpus : 1))}

# --- environment ---------------------------------------------------------------
# Two T4s on Kaggle: no NVLink, PCIe peer-to-peer unreliable in the VM, no
# InfiniBand; NCCL goes through host memory. Values already set are kept.
export NCCL_P2P_DISABLE=${NCCL_P2P_DISABLE:-1}
export NCCL_IB_DISABLE=${NCCL_IB_DISABLE:-1}
# Docker without ptrace: Open MPI's shared-memory single copy (CMA) fails.
export OMPI_MCA_btl_vader_single_copy_mechanism=${OMPI_MCA_btl_vader_single_copy_mechanism:-none}
# /dev/shm: with peer-to-peer off, NCCL's SHM transport moves the GPUs' data
# through it, and Open MPI's shared-memory BTL keeps its segments there. A
# container's default of 64 MB makes NCCL fail at start or crash (in
# ncclShmOpen); NVIDIA runs its containers with --shm-size=1g. Under 1 GiB,
# with more than one rank, NCCL goes over sockets instead (NCCL_SHM_DISABLE=1)
# and Open MPI keeps its segments in /tmp. Values already set are kept.
shm_dir=${TANDEM_SHM_DIR:-/dev/shm} shm_need_mb=1024
shm_mb=$(df -Pk "$shm_dir" 2>/dev/null | awk 'NR == 2 {print int($2 / 1024)}')
if [ -z "$shm_mb" ]; then
  shm_note="$shm_dir: not found"
else
  shm_note="$shm_dir: $shm_mb MB"
fi
if [ "$np" -gt 1 ] && [ "${shm_mb:-0}" -lt "$shm_need_mb" ]; then
  export NCCL_SHM_DISABLE=${NCCL_SHM_DISABLE:-1}
  export OMPI_MCA_btl_vader_backing_directory=${OMPI_MCA_btl_vader_backing_directory:-/tmp}
  shm_note+=", under the $shm_need_mb MB NCCL's shared memory wants: NCCL over sockets (NCCL_SHM_DISABLE=$NCCL_SHM_DISABLE), Open MPI's segments in $OMPI_MCA_btl_vader_backing_directory"
fi
# The CUDA compiler: Kaggle's image sets CUDA_HOME but may leave nvcc off
# PATH, where LibTorch's CMake package (CUDAToolkit) looks for it first.
if command -v nvcc >/dev/null 2>&1; then
  nvcc_note=$(command -v nvcc)
elif [ -n "${CUDA_HOME:-}" ] && [ -x "$CUDA_HOME/bin/nvcc" ]; then
  export PATH=$CUDA_HOME/bin:$PATH
  nvcc_note="$CUDA_HOME/bin/nvcc (from CUDA_HOME, put on PATH)"
else
  nvcc_note="none found (on PATH or in \$CUDA_HOME/bin); a build against a CUDA torch needs the CUDA toolkit"
fi
# More ranks than cores is allowed (Open MPI counts cores, not threads).
launch_openmpi_env
# The cores, not OMP_NUM_THREADS, which nproc alone answers when it is set
# (by the notebook, or below for the ranks, before the build).
cores=$(env -u OMP_NUM_THREADS -u OMP_THREAD_LIMIT nproc)
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-$((cores / np > 0 ? cores / np : 1))}

mpirun=${bundle:+$bundle/bin/}mpirun
# Open MPI unless another mpirun is installed: the bundle's is, and apt
# installs it below when missing.
if [ -n "$bundle" ] || ! command -v mpirun >/dev/null 2>&1 || launch_is_open_mpi mpirun; then
  launch_openmpi_cmd cmd "$mpirun" "$np"
else
  cmd=("$mpirun" -np "$np")
fi
cmd+=("$bin" "${LAUNCH_ARGS[@]}")
# The check before the job: the same launch, envcheck in place of the app.
check_cmd=() check_bin=$(dirname "$bin")/envcheck
if [ "$np" -gt 1 ] && [ $check -eq 1 ]; then
  check_cmd=("${cmd[@]:0:${#cmd[@]}-${#LAUNCH_ARGS[@]}-1}" "$check_bin" --test
    --set envcheck.max_mb=8 --set envcheck.iters=3 --set dist.timeout_s=60)
fi

monitor_s=${TANDEM_MONITOR_S:-10}
monitor_fields=timestamp,index,utilization.gpu,memory.used,memory.total,temperature.gpu
# shellcheck disable=SC2054  # commas inside one option
monitor_cmd=(nvidia-smi --query-gpu="$monitor_fields" --format=csv,noheader -l "$monitor_s")

# --- what will happen ----------------------------------------------------------
echo "tandem on Kaggle: $app"
if [ "$gpus" -gt 0 ]; then
  echo "  GPUs: $gpus${gpu_note:+ ($gpu_note)}"
  for l in "${gpus_all[@]:0:$gpus}"; do echo "    $l"; done
  if [ "$np" -gt 1 ]; then echo "  ranks: $np (one per GPU), NCCL between them"; else echo "  ranks: 1 on one GPU"; fi
  if grep -qiE 'T4|P100|V100|, 7\.[0-9]+$|, 6\.[0-9]+$' <<<"${gpus_all[0]}"; then
    echo "  precision: train.precision=auto -> fp16 with dynamic loss scaling (no bf16 below compute capability 8.0)"
  else
    echo "  precision: train.precision=auto -> bf16 on compute capability >= 8.0, else fp16"
  fi
  [ "$np" -gt "$gpus" ] && echo "  warning: $np ranks for $gpus GPU(s): NCCL refuses two ranks on one GPU"
else
  echo "  GPUs: none ($gpu_note)"
  echo "  ranks: $np on the CPU (fp32, $OMP_NUM_THREADS threads each)"
fi
if [ -x "$bin" ] && [ $rebuild -eq 0 ]; then
  echo "  program: $bin (built; --rebuild builds again)"
else
  if [ -n "$torch_version" ]; then from="the Python torch package, torch $torch_version"; else
    from="a venv env/setup.sh makes (no Python torch here)"
  fi
  echo "  program: $bin (to build, with LibTorch from $from)"
fi
echo "  shared memory: $shm_note"
echo "  nvcc: $nvcc_note"
echo "  environment:"
for v in NCCL_P2P_DISABLE NCCL_IB_DISABLE OMPI_MCA_btl_vader_single_copy_mechanism \
  OMPI_MCA_rmaps_base_oversubscribe OMP_NUM_THREADS; do
  echo "    $v=${!v}"
done
[ -n "${OMPI_MCA_btl_vader_backing_directory:-}" ] &&
  echo "    OMPI_MCA_btl_vader_backing_directory=$OMPI_MCA_btl_vader_backing_directory"
while IFS= read -r v; do
  case ${v%%=*} in NCCL_P2P_DISABLE | NCCL_IB_DISABLE) ;; *) echo "    $v" ;; esac
done < <(env | grep -E '^(NCCL_|CUDA_VISIBLE_DEVICES=)' | sort)
if [ $monitor -eq 1 ]; then
  if [ "$gpus" -gt 0 ]; then echo "  monitor: ${monitor_cmd[*]}"; else echo "  monitor: no GPU to watch"; fi
fi
if [ ${#check_cmd[@]} -gt 0 ]; then
  echo "  check first: ${check_cmd[*]} (every collective on $np ranks, seconds; --no-check skips it)"
elif [ "$np" -gt 1 ]; then
  echo "  check first: none (--no-check)"
fi
echo "  command: ${cmd[*]}"
if [ $dry_run -eq 1 ]; then
  echo "(dry run: nothing built or run)"
  exit 0
fi

ensure_build() {
  if [ -n "$bundle" ]; then
    launch_say "building $app with the bundle $bundle (once; no network needed)"
    TANDEM_BUILD=$build TANDEM_PYTHON=$python "$repo/env/build.sh" --bundle "$bundle" --target "$app" \
      ${check_cmd:+--target envcheck} ||
      die "build of $app with the bundle failed"
    return
  fi
  if [ -n "$torch_version" ]; then
    # LibTorch comes from the notebook's torch; the rest from apt.
    apt_install "${system_packages[@]}"
    fetch_dep tomlplusplus libtomlplusplus-dev https://github.com/marzer/tomlplusplus.git v3.4.0
    fetch_dep CLI11 libcli11-dev https://github.com/CLIUtils/CLI11.git v2.4.2
  else
    # No Python torch: a Debian machine; env/setup.sh installs everything, torch in a venv.
    "$repo/env/setup.sh" || die "env/setup.sh failed"
    source "$repo/env/python.sh"
    python=$TANDEM_PYTHON
  fi
  local gen=()
  command -v ninja >/dev/null && gen=(-G Ninja)
  if [ ! -f "$build/CMakeCache.txt" ]; then
    launch_say "configuring $build"
    cmake -S "$repo" -B "$build" "${gen[@]}" -DCMAKE_BUILD_TYPE=Release -DBUILD_TESTING=OFF \
      -DTANDEM_PYTHON="$(command -v "$python")" "${cmake_dep_args[@]}" || die "cmake configure failed"
  fi
  launch_say "building $app (once; a few minutes)"
  cmake --build "$build" --target "$app" ${check_cmd:+--target envcheck} --parallel "$cores" ||
    die "build of $app failed"
}

# The shared libraries the program needs and this session cannot find.
missing_libs() { ${bundle:+"$bundle/bin/bundle-run"} ldd "$bin" 2>/dev/null | sed -n 's/^[[:space:]]*\([^ ]*\) => not found.*/\1/p'; }

if [ ! -x "$bin" ] || [ $rebuild -eq 1 ] || { [ ${#check_cmd[@]} -gt 0 ] && [ ! -x "$check_bin" ]; }; then
  ensure_build
fi
[ -x "$bin" ] || die "$bin is missing after the build"
missing=$(missing_libs)
if [ -n "$missing" ] && [ -n "$bundle" ]; then
  die "$bin cannot find $(echo $missing) with the bundle: if they are LibTorch's (libtorch*, libc10*)," \
    "the notebook's torch is not the one it was built with: add --rebuild"
elif [ -n "$missing" ]; then
  launch_say "$bin cannot find $(echo $missing): installing the system libraries again"
  apt_install "${system_packages[@]}"
  missing=$(missing_libs)
  [ -z "$missing" ] || die "$bin still cannot find $(echo $missing): if they are LibTorch's" \
    "(libtorch*, libc10*), the notebook's torch changed since the build: add --rebuild"
fi
if [ -z "$bundle" ]; then
  command -v mpirun >/dev/null || apt_install openmpi-bin
  # gnuplot draws the figures (carotid's test report, tandem-plot's curves).
  command -v gnuplot >/dev/null || apt_install gnuplot-nox
fi
if [ "$app" = summarize ] && [ -z "$bundle" ]; then
  # GPT-2's vocabulary (quiet when present); pip fetches it the first time.
  "$repo/env/tokenizer.sh" || die "could not fetch GPT-2's tokenizer file"
fi

# --- check, then run ------------------------------------------------------------
# run_check: the check before the job, its output kept in a log and shown
# when it fails; a failure ends the script with envcheck's status.
run_check() {
  local log status started=$SECONDS
  log=$(mktemp "${TMPDIR:-/tmp}/tandem-check.XXXXXX")
  launch_say "checking the $np ranks first: envcheck --test (--no-check skips it)"
  "${check_cmd[@]}" >"$log" 2>&1
  status=$?
  # An interrupt meanwhile: launch_run below says nothing ran.
  [ "${launch_early:-0}" = 1 ] && { rm -f "$log"; return; }
  if [ $status -ne 0 ]; then
    tail -n 40 "$log" >&2
    launch_die "$status" "the check on $np ranks failed (status $status; its whole output: $log): the job would" \
      "fail the same way, so it was not started. --no-check starts it anyway"
  fi
  launch_say "check passed: every collective right on $np ranks ($((SECONDS - started)) s)"
  rm -f "$log"
}
[ ${#check_cmd[@]} -gt 0 ] && run_check

monitor_pid=
cleanup() {
  if [ -n "$monitor_pid" ]; then kill "$monitor_pid" 2>/dev/null; wait "$monitor_pid" 2>/dev/null; fi
  monitor_pid=
}
trap cleanup EXIT

if [ $monitor -eq 1 ] && [ "$gpus" -gt 0 ]; then
  "${monitor_cmd[@]}" > >(sed -u 's/^/[gpu] /') 2>&1 &
  monitor_pid=$!
fi
launch_run "${cmd[@]}"
status=$LAUNCH_STATUS
cleanup
case $status in
  0) launch_say "done" ;;
  75)
    if [ -n "$LAUNCH_CHILD" ]; then
      launch_say "stopped after a checkpoint (status 75): run the same cell again to continue"
    else
      launch_say "interrupted before the job started (status 75): run the same cell again to start it"
    fi
    ;;
  *) launch_say "failed with status $status" ;;
esac
exit "$status"
