#!/bin/bash
# Runs one tandem app as a Slurm batch job: one rank per GPU, on 1..N nodes,
# checkpointing and requeueing itself when Slurm warns that time is up or the
# job is to be preempted. From the repository (or any directory holding
# build/apps/APP, or with TANDEM_BUILD set):
#
#   mkdir -p logs
#   sbatch slurm/train.sh summarize jobs/summarize.toml
#   sbatch --nodes=2 --time=4:00:00 slurm/train.sh summarize jobs/summarize.toml --set train.lr=1e-4
#   sbatch --ntasks-per-node=8 --gpus-per-node=8 -p a100 slurm/train.sh summarize jobs/summarize.toml
#
# Arguments after APP go to the app; a JOB.toml given bare becomes --config JOB.toml.
# Every #SBATCH line below is a default that the same option on the sbatch
# command line overrides. See slurm/README.md for multi-node runs and NCCL.
#
#SBATCH --job-name=tandem
#SBATCH --nodes=1
#SBATCH --ntasks-per-node=4
#SBATCH --gpus-per-node=4
#SBATCH --cpus-per-task=8
#SBATCH --time=12:00:00
#SBATCH --output=logs/%x-%j.out
#SBATCH --open-mode=append
#SBATCH --signal=B:USR1@120
#SBATCH --requeue
#
# Environment:
#   TANDEM_BUILD        build directory holding apps/APP (default: build/ in the submit directory)
#   TANDEM_LAUNCHER     auto (default: srun --mpi=pmix when srun offers pmix, else mpirun), srun or mpirun
#   TANDEM_SRUN_ARGS    extra srun options, e.g. "--distribution=block:block"
#   TANDEM_SRUN_WAIT    seconds srun lets the other ranks run on once one has exited (default 60; 0: no limit)
#   TANDEM_MPIRUN_ARGS  extra mpirun options
#   NCCL_*              passed to every rank (srun exports the job's environment; mpirun gets -x)
#
# Exit status: the app's (0 done, 1 fault, 2 bad input, 3 collective timeout);
# 75 when stopped after a checkpoint and not requeued (SIGTERM: the job was
# cancelled, or Slurm preempts and requeues it itself; or requeue refused).
set -uo pipefail

log() { echo "[train.sh $(date '+%F %T')] $*"; }
die() {
  local status=$1
  shift
  echo "train.sh: error: $*" >&2
  exit "$status"
}

# The header above, the #SBATCH defaults shown as they are written.
usage() {
  sed -n '2,/^set -uo/p' "${BASH_SOURCE[0]}" | sed '$d' | sed -e '/^#SBATCH/s/^/  /' -e 's/^# \{0,1\}//'
}

if [ $# -lt 1 ] || [ "$1" = -h ] || [ "$1" = --help ]; then
  if [ -f "${BASH_SOURCE[0]}" ] && [ -z "${SLURM_JOB_ID:-}" ]; then usage; else
    echo "usage: sbatch slurm/train.sh APP [JOB.toml] [--set key=value ...]"
  fi
  [ $# -ge 1 ] && exit 0
  exit 2
fi
app=$1
shift

if [ -z "${SLURM_JOB_ID:-}" ]; then
  die 2 "not inside a Slurm job. Submit it:  mkdir -p logs && sbatch slurm/train.sh $app $*" \
    "(or run it inside an salloc allocation)"
fi

# --- the program and its arguments -------------------------------------------
submit_dir=${SLURM_SUBMIT_DIR:-$PWD}
candidates=()
if [ -n "${TANDEM_BUILD:-}" ]; then
  case $TANDEM_BUILD in
    /*) candidates+=("$TANDEM_BUILD/apps/$app") ;;
    *) candidates+=("$submit_dir/$TANDEM_BUILD/apps/$app") ;;
  esac
else
  # From the repository (build/apps/APP) or from build/ itself (apps/APP).
  candidates+=("$submit_dir/build/apps/$app" "$submit_dir/apps/$app")
fi
bin=
for c in "${candidates[@]}"; do
  if [ -x "$c" ] && [ -f "$c" ]; then bin=$c; break; fi
done
[ -n "$bin" ] || die 2 "no program '$app': looked for ${candidates[*]}." \
  "Build it first (env/build.sh), submit from the repository, or set TANDEM_BUILD=DIR."

# A bare JOB.toml becomes --config JOB.toml; every other argument goes as is.
args=()
prev=
for a in "$@"; do
  if [[ $a == *.toml && $prev != -* && $a != -* ]]; then
    args+=(--config "$a")
  else
    args+=("$a")
  fi
  prev=$a
done
# A missing job file stops here, before any rank starts.
for ((i = 0; i < ${#args[@]}; i++)); do
  if [ "${args[i]}" = --config ] && [ $((i + 1)) -lt ${#args[@]} ] && [ ! -f "${args[i + 1]}" ]; then
    die 2 "job file '${args[i + 1]}' not found (relative paths are from $PWD)"
  fi
done

# --- layout: nodes, tasks, GPUs ----------------------------------------------
nodes=${SLURM_JOB_NUM_NODES:-${SLURM_NNODES:-1}}
ntasks=${SLURM_NTASKS:-1}
# SLURM_TASKS_PER_NODE reads like "4(x2),3"; the first node's count is what
# this node runs.
tasks_here=${SLURM_TASKS_PER_NODE:-$ntasks}
tasks_here=${tasks_here%%,*}
tasks_here=${tasks_here%%(*}
gpus_here=${SLURM_GPUS_ON_NODE:-}
if [ -z "$gpus_here" ] && [ -n "${CUDA_VISIBLE_DEVICES:-}" ]; then
  IFS=, read -ra _v <<<"$CUDA_VISIBLE_DEVICES"
  gpus_here=${#_v[@]}
fi
gpus_here=${gpus_here:-0}

if [ "$gpus_here" -gt 0 ] && [ "$tasks_here" -gt "$gpus_here" ]; then
  die 2 "$tasks_here tasks per node but $gpus_here GPU(s) per node: tandem runs one rank per GPU." \
    "Submit with --ntasks-per-node=$gpus_here (or --gpus-per-node=$tasks_here)."
fi

# Threads per rank: what Slurm gave each task. Since Slurm 22.05 srun does
# not inherit --cpus-per-task from the batch job; SRUN_CPUS_PER_TASK passes it.
if [ -n "${SLURM_CPUS_PER_TASK:-}" ]; then
  export OMP_NUM_THREADS=${OMP_NUM_THREADS:-$SLURM_CPUS_PER_TASK}
  export SRUN_CPUS_PER_TASK=${SRUN_CPUS_PER_TASK:-$SLURM_CPUS_PER_TASK}
fi
# Open MPI's mpirun refuses root unless told (containers); harmless otherwise.
if [ "$(id -u)" -eq 0 ]; then
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi

# --- launcher ----------------------------------------------------------------
launcher=${TANDEM_LAUNCHER:-auto}
if [ "$launcher" = auto ]; then
  if command -v srun >/dev/null && srun --mpi=list 2>&1 | grep -Eq '^[[:space:]]*pmix'; then
    launcher=srun
  else
    launcher=mpirun
  fi
fi
nccl_vars=()
while IFS='=' read -r name _; do
  case $name in NCCL_* | TORCH_* | TANDEM_* | OMP_NUM_THREADS | HF_* | XDG_CACHE_HOME) nccl_vars+=("$name") ;; esac
done < <(env)

case $launcher in
  srun)
    # The job's environment (NCCL_*, CUDA_VISIBLE_DEVICES per node) goes to
    # every task; ranks follow SLURM_PROCID, local ranks SLURM_LOCALID.
    # --wait: the ranks leave MPI_Finalize together (each waits for all at a
    # barrier first), so a rank still there a minute after another exited is
    # hung past the job's work (in a driver's teardown, say). No rank can see
    # it any more; srun ends it rather than wait out the job's time limit.
    srun_wait=${TANDEM_SRUN_WAIT:-60}
    [[ $srun_wait =~ ^[0-9]+$ ]] || die 2 "TANDEM_SRUN_WAIT='$srun_wait': expected whole seconds (0: no limit)"
    # shellcheck disable=SC2206
    launch=(srun --mpi=pmix --kill-on-bad-exit=1 --wait="$srun_wait" ${TANDEM_SRUN_ARGS:-} "$bin" "${args[@]}")
    ;;
  mpirun)
    command -v mpirun >/dev/null || die 2 "srun offers no pmix here and mpirun is not on PATH"
    launch=(mpirun -np "$ntasks")
    if [[ $(mpirun --version 2>&1) == *"Open MPI"* ]]; then
      # Block placement as Slurm's: ranks 0..k-1 on the first node, so MPI's
      # local rank equals SLURM_LOCALID. No core binding: a rank uses all of
      # its --cpus-per-task for LibTorch's threads.
      launch+=(--map-by slot --bind-to none)
      [ "$(id -u)" -eq 0 ] && launch+=(--allow-run-as-root)
      for v in "${nccl_vars[@]}"; do launch+=(-x "$v"); done
    fi
    # shellcheck disable=SC2206
    launch+=(${TANDEM_MPIRUN_ARGS:-} "$bin" "${args[@]}")
    ;;
  *) die 2 "TANDEM_LAUNCHER=$launcher: use auto, srun or mpirun" ;;
esac

# --- what this job is --------------------------------------------------------
restarts=${SLURM_RESTART_COUNT:-0}
log "job ${SLURM_JOB_ID} (${SLURM_JOB_NAME:-?}), start $((restarts + 1)) (restarts: $restarts), in $PWD"
log "nodes: $nodes (${SLURM_JOB_NODELIST:-$(hostname)})"
log "tasks: $ntasks (${SLURM_TASKS_PER_NODE:-$ntasks} per node), cpus per task: ${SLURM_CPUS_PER_TASK:-default}"
if [ "$gpus_here" -gt 0 ]; then
  log "GPUs per node: $gpus_here (CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES:-unset}); one rank per GPU"
  if command -v nvidia-smi >/dev/null; then nvidia-smi -L 2>/dev/null | sed 's/^/    /'; fi
  if [ "$tasks_here" -lt "$gpus_here" ]; then
    log "warning: $tasks_here tasks for $gpus_here GPUs on this node: $((gpus_here - tasks_here)) GPU(s) stay idle"
  fi
else
  log "GPUs: none allocated: ranks run on the CPU"
fi
nccl_set=$(env | grep '^NCCL_' | sort | tr '\n' ' ')
[ -n "$nccl_set" ] || nccl_set="none set (the defaults of NCCL)"
log "NCCL settings: $nccl_set"
log "launch: ${launch[*]}"

# After a multi-node job failed: does each node of the allocation still answer?
# A step on a node whose slurmd or network is gone cannot launch, so the
# lost node is named, with the ranks it held (Slurm's block placement: the
# first node's ranks first), long before slurmctld marks it down.
name_lost_nodes() {
  local hosts=() counts=() parts=() part n first=0 i lost=0
  mapfile -t hosts < <(scontrol show hostnames "$SLURM_JOB_NODELIST" 2>/dev/null)
  IFS=, read -ra parts <<<"${SLURM_TASKS_PER_NODE:-}"
  for part in "${parts[@]}"; do
    if [[ $part =~ ^([0-9]+)\(x([0-9]+)\)$ ]]; then
      for ((i = 0; i < BASH_REMATCH[2]; i++)); do counts+=("${BASH_REMATCH[1]}"); done
    else
      counts+=("$part")
    fi
  done
  [ ${#hosts[@]} -gt 1 ] && [ ${#hosts[@]} -eq ${#counts[@]} ] || return 0
  for i in "${!hosts[@]}"; do
    n=${counts[i]}
    if ! timeout 60 srun --nodes=1 --ntasks=1 --nodelist="${hosts[i]}" --overlap --kill-on-bad-exit=0 true \
      >/dev/null 2>&1; then
      if [ "$n" -eq 1 ]; then part="rank $first"; else part="ranks $first-$((first + n - 1))"; fi
      log "node ${hosts[i]} ($part) does not answer: it was lost (its slurmd or its network is gone)"
      lost=1
    fi
    first=$((first + n))
  done
  [ $lost -eq 1 ] || log "every node of the job still answers: no node was lost"
}

# --- run, forwarding signals ---------------------------------------------------
# Slurm sends USR1 (--signal=B:USR1@120) to this shell only; the ranks get it
# from here and checkpoint. SIGTERM (scancel, preemption) goes the same way but
# means "stop", not "requeue".
child=
stop_signal=
# shellcheck disable=SC2317  # called from the traps
forward() {
  local sig=$1
  if [ "$sig" = TERM ] || [ -z "$stop_signal" ]; then stop_signal=$sig; fi
  log "received SIG$sig: forwarding it to the ranks (they checkpoint and stop)"
  if [ -n "$child" ]; then kill -s "$sig" "$child" 2>/dev/null || true; fi
}
trap 'forward USR1' USR1
trap 'forward TERM' TERM

"${launch[@]}" &
child=$!
# A signal that came before the launcher started goes to it now.
if [ -n "$stop_signal" ]; then kill -s "$stop_signal" "$child" 2>/dev/null || true; fi
while :; do
  wait "$child"
  status=$?
  # wait returns early (status > 128) when a trapped signal arrives: wait
  # again while the launcher runs on; if it ended meanwhile, one more wait
  # gives its own status (127: the first wait had it already).
  kill -0 "$child" 2>/dev/null && continue
  wait "$child" 2>/dev/null
  again=$?
  [ $again -ne 127 ] && status=$again
  break
done

case $status in
  0)
    log "done (status 0)"
    exit 0
    ;;
  75)
    if [ "$stop_signal" = TERM ]; then
      log "stopped by SIGTERM after a checkpoint (status 75): not requeueing (cancelled; a" \
        "preempting Slurm requeues by itself). Submit the same command again to continue."
      exit 75
    fi
    log "checkpointed and stopped (status 75): requeueing job $SLURM_JOB_ID; it resumes from" \
      "the latest checkpoint (train.resume = auto)"
    if scontrol requeue "$SLURM_JOB_ID"; then
      exit 0
    fi
    log "scontrol requeue failed (submitted with --no-requeue?): submit the same command again to continue"
    exit 75
    ;;
  *)
    # Status 2 is bad input, found before any rank waited on another.
    [ "$status" -ne 2 ] && [ "$nodes" -gt 1 ] && name_lost_nodes
    log "failed with status $status; not requeueing"
    exit "$status"
    ;;
esac
