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
# USR1 or SIGTERM before the ranks start (while it probes srun, say) starts
# nothing and ends as a stop after a checkpoint does: USR1 requeues, SIGTERM not.
#
# Exit status: the app's (0 done, 1 fault, 2 bad input, 3 collective timeout);
# 75 when stopped after a checkpoint and not requeued (SIGTERM: the job was
# cancelled, or Slurm preempts and requeues it itself; or requeue refused).
set -uo pipefail

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

# The launchers' library, env/launch_lib.sh of this repository. sbatch runs a
# copy of this script from Slurm's spool, so the repository is found from the
# path the job was submitted with (scontrol's Command=, relative to the submit
# directory), else from TANDEM_ROOT (env/modules sets it).
libs=("$(dirname "${BASH_SOURCE[0]}")/../env/launch_lib.sh")
if [ -n "${SLURM_JOB_ID:-}" ]; then
  script=$(scontrol show job "$SLURM_JOB_ID" 2>/dev/null | sed -n 's/^ *Command=\([^ ]*\).*/\1/p' | head -n 1)
  [[ $script == /* ]] || script=${SLURM_SUBMIT_DIR:-$PWD}/$script
  libs+=("$(dirname "$script")/../env/launch_lib.sh")
fi
[ -n "${TANDEM_ROOT:-}" ] && libs+=("$TANDEM_ROOT/env/launch_lib.sh")
for lib in "${libs[@]}" ''; do [ -f "$lib" ] && break; done
if [ -z "$lib" ]; then
  echo "train.sh: error: no env/launch_lib.sh in ${libs[*]}: submit slurm/train.sh of a" \
    "tandem repository, or set TANDEM_ROOT to one" >&2
  exit 2
fi
# shellcheck source=env/launch_lib.sh
source "$lib"
LAUNCH_NAME=train.sh LAUNCH_DATES=1
launch_trap_signals USR1 TERM

if [ -z "${SLURM_JOB_ID:-}" ]; then
  launch_die 2 "not inside a Slurm job. Submit it:  mkdir -p logs && sbatch slurm/train.sh $app $*" \
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
[ -n "$bin" ] || launch_die 2 "no program '$app': looked for ${candidates[*]}." \
  "Build it first (env/build.sh), submit from the repository, or set TANDEM_BUILD=DIR."

# A missing job file stops here, before any rank starts.
launch_job_args -- "$@"

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
  launch_die 2 "$tasks_here tasks per node but $gpus_here GPU(s) per node: tandem runs one rank per GPU." \
    "Submit with --ntasks-per-node=$gpus_here (or --gpus-per-node=$tasks_here)."
fi

# Threads per rank: what Slurm gave each task. Since Slurm 22.05 srun does
# not inherit --cpus-per-task from the batch job; SRUN_CPUS_PER_TASK passes it.
if [ -n "${SLURM_CPUS_PER_TASK:-}" ]; then
  export OMP_NUM_THREADS=${OMP_NUM_THREADS:-$SLURM_CPUS_PER_TASK}
  export SRUN_CPUS_PER_TASK=${SRUN_CPUS_PER_TASK:-$SLURM_CPUS_PER_TASK}
fi
launch_openmpi_env --exact-slots

# --- launcher ----------------------------------------------------------------
launcher=${TANDEM_LAUNCHER:-auto}
if [ "$launcher" = auto ]; then
  if command -v srun >/dev/null && srun --mpi=list 2>&1 | grep -Eq '^[[:space:]]*pmix'; then
    launcher=srun
  else
    launcher=mpirun
  fi
fi
case $launcher in
  srun)
    # The job's environment (NCCL_*, CUDA_VISIBLE_DEVICES per node) goes to
    # every task; ranks follow SLURM_PROCID, local ranks SLURM_LOCALID.
    # --wait: the ranks leave MPI_Finalize together (each waits for all at a
    # barrier first), so a rank still there a minute after another exited is
    # hung past the job's work (in a driver's teardown, say). No rank can see
    # it any more; srun ends it rather than wait out the job's time limit.
    srun_wait=${TANDEM_SRUN_WAIT:-60}
    [[ $srun_wait =~ ^[0-9]+$ ]] || launch_die 2 "TANDEM_SRUN_WAIT='$srun_wait': expected whole seconds (0: no limit)"
    # shellcheck disable=SC2206
    launch=(srun --mpi=pmix --kill-on-bad-exit=1 --wait="$srun_wait" ${TANDEM_SRUN_ARGS:-} "$bin" "${LAUNCH_ARGS[@]}")
    ;;
  mpirun)
    command -v mpirun >/dev/null || launch_die 2 "srun offers no pmix here and mpirun is not on PATH"
    if launch_is_open_mpi mpirun; then
      launch_openmpi_cmd launch mpirun "$ntasks" --map-by-slot --export-vars
    else
      launch=(mpirun -np "$ntasks")
    fi
    # shellcheck disable=SC2206
    launch+=(${TANDEM_MPIRUN_ARGS:-} "$bin" "${LAUNCH_ARGS[@]}")
    ;;
  *) launch_die 2 "TANDEM_LAUNCHER=$launcher: use auto, srun or mpirun" ;;
esac

# --- what this job is --------------------------------------------------------
restarts=${SLURM_RESTART_COUNT:-0}
launch_say "job ${SLURM_JOB_ID} (${SLURM_JOB_NAME:-?}), start $((restarts + 1)) (restarts: $restarts), in $PWD"
launch_say "nodes: $nodes (${SLURM_JOB_NODELIST:-$(hostname)})"
launch_say "tasks: $ntasks (${SLURM_TASKS_PER_NODE:-$ntasks} per node), cpus per task: ${SLURM_CPUS_PER_TASK:-default}"
if [ "$gpus_here" -gt 0 ]; then
  launch_say "GPUs per node: $gpus_here (CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES:-unset}); one rank per GPU"
  if command -v nvidia-smi >/dev/null; then nvidia-smi -L 2>/dev/null | sed 's/^/    /'; fi
  if [ "$tasks_here" -lt "$gpus_here" ]; then
    launch_say "warning: $tasks_here tasks for $gpus_here GPUs on this node: $((gpus_here - tasks_here)) GPU(s) stay idle"
  fi
else
  launch_say "GPUs: none allocated: ranks run on the CPU"
fi
nccl_set=$(env | grep '^NCCL_' | sort | tr '\n' ' ')
[ -n "$nccl_set" ] || nccl_set="none set (the defaults of NCCL)"
launch_say "NCCL settings: $nccl_set"
launch_say "launch: ${launch[*]}"

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
      launch_say "node ${hosts[i]} ($part) does not answer: it was lost (its slurmd or its network is gone)"
      lost=1
    fi
    first=$((first + n))
  done
  [ $lost -eq 1 ] || launch_say "every node of the job still answers: no node was lost"
}

# --- run, forwarding signals ---------------------------------------------------
# Slurm sends USR1 (--signal=B:USR1@120) to this shell only; the ranks get it
# from here and checkpoint. SIGTERM (scancel, preemption) goes the same way but
# means "stop", not "requeue".
launch_run "${launch[@]}"
status=$LAUNCH_STATUS
if [ -n "$LAUNCH_CHILD" ]; then stopped="after a checkpoint"; else stopped="before the job started"; fi

case $status in
  0)
    launch_say "done (status 0)"
    exit 0
    ;;
  75)
    if [ "$LAUNCH_STOP" = TERM ]; then
      launch_say "stopped by SIGTERM $stopped (status 75): not requeueing (cancelled; a" \
        "preempting Slurm requeues by itself). Submit the same command again to continue."
      exit 75
    fi
    if [ -n "$LAUNCH_CHILD" ]; then
      launch_say "checkpointed and stopped (status 75): requeueing job $SLURM_JOB_ID; it resumes from" \
        "the latest checkpoint (train.resume = auto)"
    else
      launch_say "stopped before the job started (status 75): requeueing job $SLURM_JOB_ID"
    fi
    if scontrol requeue "$SLURM_JOB_ID"; then
      exit 0
    fi
    launch_say "scontrol requeue failed (submitted with --no-requeue?): submit the same command again to continue"
    exit 75
    ;;
  *)
    # Status 2 is bad input, found before any rank waited on another.
    [ "$status" -ne 2 ] && [ "$nodes" -gt 1 ] && name_lost_nodes
    launch_say "failed with status $status; not requeueing"
    exit "$status"
    ;;
esac
