#!/bin/bash
# A stand-in for apps/vavae (not written yet) in the pipeline test: the test
# copies it to FAKEBUILD/apps/vavae. Each rank logs when its stage starts and
# ends to $STANDIN_LOG, runs the real envcheck in between (an MPI job on the
# same ranks, so the stage is a real multi-rank step), and can act out a
# preemption (exit 75 on the first start: $STANDIN_PREEMPT=STAGE) or a
# failure ($STANDIN_FAIL=STAGE).
#   vavae STAGE --config JOB.toml [--set ...]
set -u
stage=${1:-none}
rank=${SLURM_PROCID:-${OMPI_COMM_WORLD_RANK:-0}}
restart=${SLURM_RESTART_COUNT:-0}
note() {
  echo "$(date +%s.%N) job=${SLURM_JOB_ID:-none} stage=$stage $1 rank=$rank ntasks=${SLURM_NTASKS:-1} restart=$restart args=${*:2}" >>"$STANDIN_LOG"
}
note start "$@"
sleep 1
"$STANDIN_ENVCHECK" >"$STANDIN_LOG.envcheck.$stage.$rank" 2>&1 || { note envcheck-failed; exit 1; }
if [ "${STANDIN_FAIL:-}" = "$stage" ]; then note fail; exit 1; fi
if [ "${STANDIN_PREEMPT:-}" = "$stage" ] && [ "$restart" = 0 ]; then note preempted; exit 75; fi
note end
