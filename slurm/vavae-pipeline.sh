#!/bin/bash
# Submits the VA-VAE pipeline as four Slurm jobs, each waiting for the one
# before it to succeed (--dependency=afterok), each with its own resources:
#
#   1. train-vae   the VAE tokenizer            4 GPUs, 24 h
#   2. extract     images -> latents (HDF5)     4 GPUs,  4 h
#   3. train-dit   the diffusion transformer    4 GPUs, 24 h
#   4. sample      images from the DiT          1 GPU,   1 h
#
# Every stage runs `apps/vavae STAGE --config JOB.toml [--set ...]` through
# slurm/train.sh, so each one checkpoints and requeues itself when preempted
# or out of time, and the next stage still waits for it. If a stage fails,
# the stages after it are cancelled (--kill-on-invalid-dep=yes).
#
#   slurm/vavae-pipeline.sh                                  # jobs/vavae.toml
#   slurm/vavae-pipeline.sh jobs/vavae.toml --set dit.lr=2e-4
#   slurm/vavae-pipeline.sh --sbatch "-p gpu -A myproject" jobs/vavae.toml
#   slurm/vavae-pipeline.sh --stages train-dit,sample --after 12345 jobs/vavae.toml
#   slurm/vavae-pipeline.sh --dry-run jobs/vavae.toml       # print the sbatch lines only
#
# Options (before or after the job file):
#   --stages LIST   comma-separated subset, in pipeline order (default: all four)
#   --after JOBID   the first stage also waits for this job to succeed
#   --sbatch ARGS   sbatch options for every stage (after the stage's own, so they win)
#   --app NAME      program under build/apps (default: vavae)
#   --dry-run       print what would be submitted; submit nothing
#   -h, --help      this text
# Per-stage resources: VAVAE_SBATCH_TRAIN_VAE, VAVAE_SBATCH_EXTRACT,
# VAVAE_SBATCH_TRAIN_DIT, VAVAE_SBATCH_SAMPLE replace a stage's defaults below.
# Other arguments (--set k=v, ...) go to every stage.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
all_stages=(train-vae extract train-dit sample)
declare -A resources=(
  [train-vae]="--nodes=1 --ntasks-per-node=4 --gpus-per-node=4 --cpus-per-task=8 --time=24:00:00"
  [extract]="--nodes=1 --ntasks-per-node=4 --gpus-per-node=4 --cpus-per-task=8 --time=4:00:00"
  [train-dit]="--nodes=1 --ntasks-per-node=4 --gpus-per-node=4 --cpus-per-task=8 --time=24:00:00"
  [sample]="--nodes=1 --ntasks-per-node=1 --gpus-per-node=1 --cpus-per-task=8 --time=1:00:00"
)
for s in "${all_stages[@]}"; do
  var=VAVAE_SBATCH_$(tr 'a-z-' 'A-Z_' <<<"$s")
  if [ -n "${!var:-}" ]; then resources[$s]=${!var}; fi
done

usage() { sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d' | sed 's/^# \{0,1\}//'; }
die() {
  echo "vavae-pipeline: error: $*" >&2
  exit 2
}

stages_arg=
after=
common=
app=vavae
dry_run=0
job=
pass=()
while [ $# -gt 0 ]; do
  case $1 in
    --stages) stages_arg=${2:?--stages needs a list}; shift 2 ;;
    --stages=*) stages_arg=${1#*=}; shift ;;
    --after) after=${2:?--after needs a job id}; shift 2 ;;
    --after=*) after=${1#*=}; shift ;;
    --sbatch) common=${2?--sbatch needs options}; shift 2 ;;
    --sbatch=*) common=${1#*=}; shift ;;
    --app) app=${2:?--app needs a name}; shift 2 ;;
    --app=*) app=${1#*=}; shift ;;
    --dry-run) dry_run=1; shift ;;
    -h | --help) usage; exit 0 ;;
    --set | --config)
      [ $# -ge 2 ] || die "$1 needs a value"
      if [ "$1" = --config ]; then job=$2; else pass+=("$1" "$2"); fi
      shift 2
      ;;
    *.toml) job=$1; shift ;;
    *) pass+=("$1"); shift ;;
  esac
done
job=${job:-jobs/vavae.toml}

stages=()
if [ -n "$stages_arg" ]; then
  IFS=, read -ra wanted <<<"$stages_arg"
  for s in "${all_stages[@]}"; do
    for w in "${wanted[@]}"; do [ "$w" = "$s" ] && stages+=("$s"); done
  done
  for w in "${wanted[@]}"; do
    [ -n "${resources[$w]+x}" ] || die "unknown stage '$w' (stages: ${all_stages[*]})"
  done
else
  stages=("${all_stages[@]}")
fi
[ ${#stages[@]} -gt 0 ] || die "no stage to run"

if [ $dry_run -eq 0 ]; then
  [ -f "$job" ] || die "job file '$job' not found (give one: slurm/vavae-pipeline.sh JOB.toml)"
  command -v sbatch >/dev/null || die "sbatch is not on PATH: run this on a Slurm login node"
  # train.sh writes to logs/ by default; Slurm does not create it.
  mkdir -p logs
fi

echo "VA-VAE pipeline: ${stages[*]} with $job${pass[*]:+ ${pass[*]}}"
prev=$after
prev_var=
for s in "${stages[@]}"; do
  # shellcheck disable=SC2206  # resource strings are lists of options
  opts=(--job-name="$app-$s" --kill-on-invalid-dep=yes ${resources[$s]} $common)
  rest=("$here/train.sh" "$app" "$s" "$job" "${pass[@]}")
  if [ $dry_run -eq 1 ]; then
    # A shell snippet that does the same: each id into a variable.
    var=JOB_$(tr 'a-z-' 'A-Z_' <<<"$s")
    dep=
    if [ -n "$prev_var" ]; then dep=" --dependency=afterok:\$$prev_var"
    elif [ -n "$after" ]; then dep=" --dependency=afterok:$after"; fi
    echo "$var=\$(sbatch --parsable$dep $(printf '%q ' "${opts[@]}" "${rest[@]}" | sed 's/ $//'))"
    prev_var=$var
    continue
  fi
  cmd=(sbatch --parsable)
  if [ -n "$prev" ]; then cmd+=(--dependency="afterok:$prev"); fi
  cmd+=("${opts[@]}" "${rest[@]}")
  out=$("${cmd[@]}") || die "sbatch failed for stage $s (stages before it stay queued)"
  id=${out%%;*}
  printf '  %-10s job %s%s\n' "$s" "$id" "${prev:+ (after $prev)}"
  prev=$id
done
if [ $dry_run -eq 1 ]; then
  echo "(dry run: nothing submitted)"
else
  echo "watch with: squeue -u $(id -un) -o '%.10i %.20j %.10T %.20E'"
fi
