#!/bin/bash
# The slurm/ scripts on a real Slurm: a private one-node cluster (munged,
# slurmctld, slurmd on loopback, everything under a temporary directory),
# jobs submitted with sbatch as a user would, and every daemon stopped by its
# pid at the end, also when a check fails.
#
#   tests/slurm/slurm_test.sh CASE REPO BUILD
#     CASE   train     2-rank summarize job completes; mpirun fallback; failures keep their status
#            preempt   USR1 mid-run -> checkpoint, exit 75, requeue, resume, right final step;
#                      USR1 with --no-requeue and a plain scancel: checkpoint, 75, no requeue
#            preempt-mpirun   the same through mpirun and scancel --full
#            preempt-before-launch   USR1 while train.sh probes srun (a slow fake srun):
#                      nothing starts, 75, requeue, the second start runs it all; a
#                      plain scancel there: 75, no requeue
#            pipeline  slurm/vavae-pipeline.sh with apps/vavae: stages in order, a preempted
#                      stage requeues while the next waits, a failed one cancels the rest
#            cv        carotid cross-validation as docs/carotid.md chains it: a job per fold, then
#                      cv-report after all of them (afterok); every person tested once
#            multinode two hosts (network namespaces joined by veth links): summarize on
#                      2 nodes x 1 and x 2 ranks names each rank's host and local rank, sends
#                      its traffic over the link, and logs the losses of 1 node x 2; a
#                      2-node job preempted with USR1 requeues and resumes on 2 nodes; a
#                      node lost mid-run ends the job, named, and it resumes once it is back
#            multinode-pipeline   the pipeline case on the two hosts, a rank on each
#     REPO   the source tree (slurm/, jobs/)
#     BUILD  the build tree (apps/summarize, apps/vavae, apps/carotid, apps/envcheck, the
#            Fashion-MNIST fixture)
#
# Needs root (or passwordless sudo) and Debian's slurm-wlm and munge; skips
# (status 77) with the reason otherwise. TANDEM_SLURM_KEEP=1 keeps the
# temporary directory (logs, run directories) even when every check passes;
# TANDEM_SLURM_TIMEOUT (default 600 s) bounds the waiting for jobs.
set -uo pipefail

case_name=${1:?usage: slurm_test.sh CASE REPO BUILD}
repo=$(cd "${2:?REPO}" && pwd)
build=$(cd "${3:?BUILD}" && pwd)
SKIP=77
case $case_name in
  train | preempt | preempt-mpirun | preempt-before-launch | pipeline | cv | multinode | multinode-pipeline) ;;
  *)
    echo "unknown case '$case_name' (train, preempt, preempt-mpirun, preempt-before-launch, pipeline, cv," \
      "multinode, multinode-pipeline)"
    exit 2
    ;;
esac

say() { echo "[slurm-test $(date +%T)] $*"; }
skip() {
  echo "SKIPPED: $*"
  exit $SKIP
}

tools=(munged slurmctld slurmd sbatch squeue scontrol scancel sinfo python3)
[[ $case_name == multinode* ]] && tools+=(ip nsenter unshare)
for tool in "${tools[@]}"; do
  command -v "$tool" >/dev/null 2>&1 ||
    skip "$tool not found: install Slurm and MUNGE (apt-get install -y slurm-wlm munge, or env/setup.sh)"
done
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null && sudo -n true 2>/dev/null; then
    say "not root: running the test through sudo (slurmd starts jobs as their users, so it runs as root)"
    exec sudo -n --preserve-env=PATH,TANDEM_SLURM_KEEP,TANDEM_SLURM_TIMEOUT bash "$0" "$@"
  fi
  skip "the test cluster's slurmd must run as root: run as root, or allow passwordless sudo"
fi

# Short path: the MUNGE socket path must fit in a UNIX socket address.
tmp=$(mktemp -d /tmp/tandem-slurm.XXXXXX)
chmod 755 "$tmp"
# shellcheck source=tests/slurm/cluster.sh
source "$(dirname "$0")/cluster.sh"

# shellcheck source=tests/lib/harness.sh
source "$repo/tests/lib/harness.sh"

finish() {
  local status=$?
  [ $failed -eq 1 ] && status=1
  # Jobs first (their processes belong to slurmstepd), then the daemons.
  if [ -n "${SLURM_CONF:-}" ] && [ ${#cluster_pids[@]} -gt 0 ]; then
    local left
    left=$(squeue -h -o %i 2>/dev/null | tr '\n' ' ')
    if [ -n "${left// /}" ]; then
      say "cancelling jobs still queued: $left"
      # shellcheck disable=SC2086
      scancel $left 2>/dev/null
      for _ in $(seq 60); do [ -z "$(squeue -h -o %i 2>/dev/null)" ] && break; sleep 0.5; done
    fi
  fi
  if [ $status -ne 0 ] && [ $status -ne $SKIP ] && [ -d "$tmp/cluster/log" ]; then
    for f in "$tmp"/cluster/log/slurmctld.log "$tmp"/cluster/log/slurmd*.log; do
      echo "---- last lines of $f"
      tail -n 25 "$f"
    done
  fi
  cluster_stop
  cluster_sweep
  harness_keep=${TANDEM_SLURM_KEEP:-} harness_label="$case_name, ${SECONDS}s"
  harness_finish $status
}
trap finish EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
# Every wait below ends by this deadline, well inside ctest's TIMEOUT, so the
# cleanup above always runs (ctest's timeout kill would skip it).
deadline=$((SECONDS + ${TANDEM_SLURM_TIMEOUT:-600}))

nodes=1
[[ $case_name == multinode* ]] && nodes=2
cluster_start "$tmp/cluster" $nodes || exit 1

submit=$tmp/submit
mkdir -p "$submit/logs"
cd "$submit" || exit 1
export TANDEM_BUILD=$build
export OMPI_MCA_rmaps_base_oversubscribe=1
export TANDEM_TOKENIZER_DIR=${TANDEM_TOKENIZER_DIR:-}
[ -n "$TANDEM_TOKENIZER_DIR" ] || unset TANDEM_TOKENIZER_DIR
# The test node has no GPUs and 2 CPUs: resources of the scripts' defaults
# that it cannot give are overridden on the sbatch line, as a user would.
cpu_only=(--gpus-per-node=0 --cpus-per-task=1)
tiny=("$repo/jobs/summarize-tiny.toml" --set data.cache_dir="$tmp/token-cache"
  --set train.warmup_steps=1 --set gen.max_new_tokens=8)

# --- helpers --------------------------------------------------------------------
job_field() { # job_field ID FIELD: JobState, ExitCode, Restarts, ... from scontrol
  scontrol show job "$1" 2>/dev/null | tr ' ' '\n' | sed -n "s/^$2=//p" | head -n 1
}
wait_jobs() { # wait_jobs ID...: until none is queued or running (or the deadline)
  local ids
  ids=$(IFS=, && echo "$*")
  while [ $SECONDS -lt $deadline ]; do
    [ -z "$(squeue -h -j "$ids" -o %i 2>/dev/null)" ] && return 0
    sleep 1
  done
  fail "jobs $* still queued at the test's deadline: $(squeue -h -o '%i %j %T %r' | tr '\n' ';')"
  return 1
}
expect_job() { # expect_job ID STATE EXITCODE RESTARTS
  local st ex rs
  if [ -z "$1" ]; then
    fail "no job id (sbatch refused the job?)"
    return
  fi
  st=$(job_field "$1" JobState)
  ex=$(job_field "$1" ExitCode)
  rs=$(job_field "$1" Restarts)
  say "job $1: JobState=$st ExitCode=$ex Restarts=$rs"
  [ "$st" = "$2" ] || fail "job $1: state $st, wanted $2"
  [ "$ex" = "$3" ] || fail "job $1: exit code $ex, wanted $3"
  [ "$rs" = "$4" ] || fail "job $1: $rs restarts, wanted $4"
}
# On this private cluster (Open MPI 4.1.4 over Slurm's PMIx, two "nodes" in
# network namespaces sharing one /tmp), rank 0 now and then dies of SIGSEGV
# during start-up, before tandem logs its first line: in 2 of 9 clean runs of
# case_multinode over two sessions, never reproduced alone. Open MPI's handler
# prints it, with no frame past the signal. The layout jobs take such a job
# again once; a second crash, or any other failure, fails the test.
crashed_in_start_up() { # crashed_in_start_up ID OUT
  [ "$(job_field "$1" JobState)" = FAILED ] && grep -q "Segmentation fault" "$2" 2>/dev/null &&
    ! grep -q "INFO " "$2" 2>/dev/null
}
expect_line() { # expect_line FILE REGEX: some line of FILE matches
  if grep -Eq -- "$2" "$1" 2>/dev/null; then
    say "  ok: $(grep -Em1 -- "$2" "$1")"
  else
    fail "no line of $1 matches: $2"
    [ -f "$1" ] && sed 's/^/    | /' "$1" | grep -v '^    | train [0-9]' | tail -n 40
  fi
}
loss_steps() { # loss_steps METRICS: the step of every training line, in order
  python3 -c 'import json,sys
print(" ".join(str(r["step"]) for r in map(json.loads, open(sys.argv[1])) if "loss" in r))' "$1"
}
expect_steps() { # expect_steps METRICS N: training lines are exactly steps 1..N
  local got want
  got=$(loss_steps "$1")
  want=$(seq -s ' ' 1 "$2")
  if [ "$got" = "$want" ]; then say "  ok: $1 has steps 1..$2, each once"; else
    fail "$1: training steps '$got', wanted '$want'"
  fi
}
steps_logged() { # steps_logged METRICS N JOB: 0 once N training steps are logged, 1 if the job ended first
  while [ $SECONDS -lt $deadline ]; do
    if [ -f "$1" ] && [ "$(grep -c '"loss"' "$1")" -ge "$2" ]; then return 0; fi
    [ -z "$(squeue -h -j "$3" -o %i 2>/dev/null)" ] && return 1
    sleep 0.5
  done
  return 1
}
wait_steps() { # wait_steps METRICS N JOB: steps_logged, or the test fails
  steps_logged "$@" && return 0
  fail "job $3 never logged $2 steps in $1"
  return 1
}
launcher_line() { # what train.sh should pick here
  if srun --mpi=list 2>&1 | grep -Eq '^[[:space:]]*pmix'; then echo "launch: srun --mpi=pmix"; else
    echo "launch: mpirun"
  fi
}

# --- cases ------------------------------------------------------------------------
case_train() {
  local a b c d e
  say "A: sbatch slurm/train.sh summarize jobs/summarize-tiny.toml, 2 tasks, 6 steps (train, eval, predict)"
  a=$(sbatch --parsable --ntasks-per-node=2 "${cpu_only[@]}" "$repo/slurm/train.sh" summarize \
    "${tiny[@]}" --set train.max_steps=6 --set train.out_dir="$tmp/run-a")
  say "B: envcheck through the mpirun fallback (TANDEM_LAUNCHER=mpirun)"
  b=$(TANDEM_LAUNCHER=mpirun sbatch --parsable --job-name=envcheck --ntasks-per-node=2 "${cpu_only[@]}" \
    "$repo/slurm/train.sh" envcheck)
  say "C: bad input (warmup past the run's steps): status 2, no requeue"
  c=$(sbatch --parsable --job-name=bad --ntasks-per-node=2 "${cpu_only[@]}" "$repo/slurm/train.sh" summarize \
    "${tiny[@]}" --set train.max_steps=3 --set train.warmup_steps=5 --set train.out_dir="$tmp/run-c")
  say "D: a program that is not built: status 2"
  d=$(TANDEM_BUILD=$tmp/nowhere sbatch --parsable --job-name=nobuild --ntasks-per-node=1 "${cpu_only[@]}" \
    "$repo/slurm/train.sh" summarize)
  say "E: 2 tasks per node on 1 GPU: refused before launch, status 2"
  e=$(CUDA_VISIBLE_DEVICES=0 sbatch --parsable --job-name=gpus --ntasks-per-node=2 "${cpu_only[@]}" \
    "$repo/slurm/train.sh" envcheck)
  say "submitted A=$a B=$b C=$c D=$d E=$e; waiting"
  wait_jobs "$a" "$b" "$c" "$d" "$e"

  expect_job "$a" COMPLETED 0:0 0
  expect_line "logs/tandem-$a.out" "\] tasks: 2 \(2 per node\)"
  expect_line "logs/tandem-$a.out" "$(launcher_line)"
  expect_line "logs/tandem-$a.out" "training on 2 rank\(s\)"
  expect_line "logs/tandem-$a.out" "done: 6 steps"
  expect_line "logs/tandem-$a.out" "submission: 100 rows"
  expect_line "logs/tandem-$a.out" "done \(status 0\)"
  expect_steps "$tmp/run-a/metrics.jsonl" 6

  expect_job "$b" COMPLETED 0:0 0
  expect_line "logs/envcheck-$b.out" "launch: mpirun (--allow-run-as-root )?-np 2 .*--bind-to none"
  expect_line "logs/envcheck-$b.out" "Ranks: 2 on 1 node"

  expect_job "$c" FAILED 2:0 0
  expect_line "logs/bad-$c.out" "warmup_steps \(5\) must be less than"
  expect_line "logs/bad-$c.out" "failed with status 2; not requeueing"

  expect_job "$d" FAILED 2:0 0
  expect_line "logs/nobuild-$d.out" "no program 'summarize'"

  expect_job "$e" FAILED 2:0 0
  expect_line "logs/gpus-$e.out" "2 tasks per node but 1 GPU\(s\) per node.*--ntasks-per-node=1"

  if [ "$(launcher_line)" = "launch: srun --mpi=pmix" ]; then
    say "G: rank 1 stops after MPI_Finalize, the work done: srun --wait=3 ends it (TANDEM_SRUN_WAIT)"
    local g progs=$tmp/progs
    mkdir -p "$progs/apps" && ln -sf "$build/tests/dead_rank" "$progs/apps/dead_rank"
    g=$(TANDEM_BUILD=$progs TANDEM_SRUN_WAIT=3 sbatch --parsable --job-name=straggler --ntasks-per-node=2 \
      "${cpu_only[@]}" "$repo/slurm/train.sh" dead_rank stop-after)
    wait_jobs "$g"
    expect_job "$g" FAILED 137:0 0
    expect_line "logs/straggler-$g.out" "launch: srun --mpi=pmix --kill-on-bad-exit=1 --wait=3 "
    expect_line "logs/straggler-$g.out" "First task exited 3s ago"
    expect_line "logs/straggler-$g.out" "failed with status 137; not requeueing"
    say "H: TANDEM_SRUN_WAIT that is not whole seconds: status 2 before launch"
    local h
    h=$(TANDEM_SRUN_WAIT=1m sbatch --parsable --job-name=badwait --ntasks-per-node=1 "${cpu_only[@]}" \
      "$repo/slurm/train.sh" envcheck)
    wait_jobs "$h"
    expect_job "$h" FAILED 2:0 0
    expect_line "logs/badwait-$h.out" "TANDEM_SRUN_WAIT='1m': expected whole seconds"
  fi

  say "F: train.sh outside a job tells how to submit it"
  local out
  out=$(env -u SLURM_JOB_ID bash "$repo/slurm/train.sh" summarize 2>&1)
  local st=$?
  [ $st -eq 2 ] || fail "train.sh outside Slurm: status $st, wanted 2"
  if grep -q "sbatch slurm/train.sh summarize" <<<"$out"; then say "  ok: $out"; else
    fail "train.sh outside Slurm said: $out"
  fi
}

# preempt LAUNCHER SCANCEL_FLAG [SBATCH LAYOUT...] (default: 2 tasks on one node)
run_preempt() {
  local launcher=$1 flag=$2 steps=14 id run=$tmp/run-preempt-$1 out layout=(--ntasks-per-node=2)
  [ $# -gt 2 ] && layout=("${@:3}")
  say "sbatch ${layout[*]} slurm/train.sh summarize train jobs/summarize-tiny.toml, $steps steps, launcher $launcher"
  id=$(TANDEM_LAUNCHER=$launcher sbatch --parsable --job-name=preempt "${layout[@]}" "${cpu_only[@]}" \
    "$repo/slurm/train.sh" summarize train "${tiny[@]}" --set train.max_steps=$steps \
    --set train.out_dir="$run")
  out=logs/preempt-$id.out
  wait_steps "$run/metrics.jsonl" 3 "$id" || return
  say "job $id at step $(loss_steps "$run/metrics.jsonl" | wc -w): scancel --signal=USR1 $flag $id"
  scancel --signal=USR1 "$flag" "$id" || fail "scancel failed"
  wait_jobs "$id"

  expect_job "$id" COMPLETED 0:0 1
  expect_line "$out" "received SIGUSR1: forwarding it to the ranks"
  expect_line "$out" "signal 10 received: checkpointing at step [0-9]+ and exiting with status 75"
  expect_line "$out" "checkpointed and stopped \(status 75\): requeueing job $id"
  expect_line "$out" "job $id \(preempt\), start 2 \(restarts: 1\)"
  expect_line "$run/logs/rank-0.log" "resumed from .*/checkpoints/step-[0-9]+\.h5 at step [1-9][0-9]* \(was 2 ranks, now 2\)"
  expect_line "$out" "done: $steps steps"
  expect_line "$out" "done \(status 0\)"
  expect_steps "$run/metrics.jsonl" $steps
  local resumed saved
  saved=$(sed -nE 's/.*checkpointing at step ([0-9]+).*/\1/p' "$out" | head -n 1)
  resumed=$(sed -nE 's/.*resumed from .* at step ([0-9]+).*/\1/p' "$run/logs/rank-0.log" | head -n 1)
  if [ -n "$saved" ] && [ "$saved" = "$resumed" ] && [ "$saved" -lt $steps ]; then
    say "  ok: checkpointed at step $saved, resumed at step $resumed, finished at step $steps"
  else
    fail "checkpointed at step '$saved' but resumed at step '$resumed'"
  fi
  if [ -f "$run/checkpoints/step-$(printf %08d $steps).h5" ] && [ -f "$run/models/final_model.h5" ]; then
    say "  ok: $(cd "$run" && echo checkpoints/*.h5 models/final_model.h5)"
  else
    fail "no final checkpoint / models/final_model.h5 in $run"
  fi
}

# A stop before the ranks start: a fake srun first on PATH (sbatch passes PATH
# on) is slow to answer train.sh's `srun --mpi=list`, and the signal comes
# then. USR1: nothing starts, 75, requeue, and the second start runs the whole
# job. A plain scancel (SIGTERM): nothing starts, 75, no requeue.
case_preempt_before_launch() {
  local fake=$tmp/fake-srun id out run steps=6 variant real_srun
  real_srun=$(command -v srun)
  mkdir -p "$fake"
  cat >"$fake/srun" <<EOF
#!/bin/bash
if [ "\$*" = --mpi=list ]; then
  touch "$fake/probing.\$SLURM_JOB_ID.\${SLURM_RESTART_COUNT:-0}"
  sleep 5
fi
exec "$real_srun" "\$@"
EOF
  chmod +x "$fake/srun"
  for variant in usr1 term; do
    run=$tmp/run-early-$variant
    id=$(PATH=$fake:$PATH sbatch --parsable --job-name=early-$variant --ntasks-per-node=2 "${cpu_only[@]}" \
      "$repo/slurm/train.sh" summarize train "${tiny[@]}" --set train.max_steps=$steps --set train.out_dir="$run")
    out=logs/early-$variant-$id.out
    while [ $SECONDS -lt $deadline ] && [ ! -e "$fake/probing.$id.0" ]; do sleep 0.2; done
    if [ $variant = usr1 ]; then
      say "job $id probes srun: scancel --signal=USR1 --batch $id"
      scancel --signal=USR1 --batch "$id" || fail "scancel failed"
    else
      say "job $id probes srun: scancel $id (SIGTERM)"
      scancel "$id" || fail "scancel failed"
    fi
    wait_jobs "$id"
    expect_line "$out" "received SIG${variant^^} before the job started: not starting it"
    expect_line "$out" "stopped by SIG${variant^^} before the job started: nothing ran \(status 75\)"
    if [ $variant = usr1 ]; then
      expect_job "$id" COMPLETED 0:0 1
      expect_line "$out" "stopped before the job started \(status 75\): requeueing job $id"
      expect_line "$out" "job $id \(early-usr1\), start 2 \(restarts: 1\)"
      expect_line "$out" "done: $steps steps"
      expect_steps "$run/metrics.jsonl" $steps
      if grep -q "resumed from" "$run/logs/rank-0.log" 2>/dev/null; then
        fail "the second start resumed from a checkpoint: the first one ran"
      fi
    else
      expect_job "$id" CANCELLED 75:0 0
      expect_line "$out" "stopped by SIGTERM before the job started \(status 75\): not requeueing"
      [ ! -e "$run" ] || fail "a rank ran: $run exists"
    fi
  done
}

job_end() { # job_end ID: when the job ended, in seconds since the epoch (0: unknown)
  date -d "$(job_field "$1" EndTime)" +%s 2>/dev/null || echo 0
}
first_start() { # first_start OUT: when train.sh first logged in OUT (a requeued job's
  # StartTime is its last start), in seconds since the epoch (0: unknown)
  local stamp
  stamp=$(sed -nE 's/^\[train\.sh ([0-9-]+ [0-9:]+)\].*/\1/p' "$1" 2>/dev/null | head -n 1)
  if [ -n "$stamp" ]; then date -d "$stamp" +%s; else echo 0; fi
}

# The real apps/vavae on a Fashion-MNIST split small enough for seconds per
# stage: the chain runs in order with each stage's own task count, a train-dit
# preempted mid-run requeues and resumes while sample keeps waiting for it,
# and a stage stopped by bad input cancels the stages after it unstarted.
case_pipeline() {
  local fixture=$build/tests/vavae_fashion_mnist_split data=$tmp/data_split run1=$tmp/run-pipeline
  local fashion=/usr/share/datasets/fashion-mnist job=$repo/jobs/vavae-tiny.toml
  [ -x "$build/apps/vavae" ] || skip "no $build/apps/vavae: build it first"
  [ -x "$fixture" ] || skip "no $fixture: build the tests first"
  "$fixture" "$fashion" "$data" 4 16 4 32 >"$tmp/fixture.txt" 2>&1
  case $? in
    0) ;;
    77) skip "no Fashion-MNIST in $fashion (apt-get install dataset-fashion-mnist, or env/setup.sh --tests)" ;;
    *) cat "$tmp/fixture.txt"; fail "writing the Fashion-MNIST split failed"; return ;;
  esac
  # The test node: 2 CPUs, no GPUs. Stages keep their own task counts (the
  # sample stage's single task comes from the pipeline's defaults).
  # On two hosts the multi-rank stages take one rank on each.
  local layout="--nodes=1 --ntasks-per-node=2" per_node="2"
  [ "$nodes" = 2 ] && layout="--nodes=2 --ntasks-per-node=1" per_node="1\\(x2\\)"
  export VAVAE_SBATCH_TRAIN_VAE="$layout --time=10"
  export VAVAE_SBATCH_EXTRACT="$layout --time=10"
  export VAVAE_SBATCH_TRAIN_DIT="$layout --time=10"
  local common="--gpus-per-node=0 --cpus-per-task=1"
  # Few steps everywhere, but enough DiT steps (~0.15 s each) to preempt it
  # mid-run.
  local dit_steps=150
  local small=(--data-root "$data" --set train.eval_every=50 --set vae.max_steps=4
    --set dit.max_steps=$dit_steps --set dit.warmup_steps=5 --set sample.num_samples_per_user=1
    --set sample.num_steps=2 --set sample.batch=4)

  say "dry run prints the chain"
  "$repo/slurm/vavae-pipeline.sh" --dry-run --sbatch "$common" "$job" >"$tmp/dry.txt" 2>&1 ||
    fail "dry run failed"
  cat "$tmp/dry.txt"
  expect_line "$tmp/dry.txt" "^JOB_SAMPLE=.*--dependency=afterok:\\\$JOB_TRAIN_DIT .*train.sh vavae sample"
  ! compgen -G "logs/vavae-*.out" >/dev/null || fail "the dry run ran something"

  say "pipeline 1: every stage of apps/vavae in order; train-dit is preempted (USR1) mid-run"
  "$repo/slurm/vavae-pipeline.sh" --sbatch "$common" "$job" "${small[@]}" --run-dir "$run1" | tee "$tmp/p1.txt"
  say "pipeline 2: extract without a VAE (bad input, exit 2); train-dit and sample must never start"
  "$repo/slurm/vavae-pipeline.sh" --stages extract,train-dit,sample --sbatch "$common" "$job" "${small[@]}" \
    --run-dir "$tmp/run-novae" | tee "$tmp/p2.txt"
  local -A p1 p2
  local s
  for s in train-vae extract train-dit sample; do
    p1[$s]=$(awk -v s="$s" '$1 == s {print $3}' "$tmp/p1.txt")
    p2[$s]=$(awk -v s="$s" '$1 == s {print $3}' "$tmp/p2.txt")
  done
  local dit=${p1[train-dit]}
  wait_steps "$run1/dit/metrics.jsonl" 10 "$dit" || return
  say "train-dit (job $dit) at step $(loss_steps "$run1/dit/metrics.jsonl" | wc -w): scancel --signal=USR1 --batch $dit"
  scancel --signal=USR1 --batch "$dit" || fail "scancel failed"
  wait_jobs "${p1[@]}" "${p2[@]}"

  # Pipeline 1: each stage complete, with its task count, after the one before.
  expect_job "${p1[train-vae]}" COMPLETED 0:0 0
  expect_job "${p1[extract]}" COMPLETED 0:0 0
  expect_job "$dit" COMPLETED 0:0 1
  expect_job "${p1[sample]}" COMPLETED 0:0 0
  local prev= ranks out
  for s in train-vae extract train-dit sample; do
    out=logs/vavae-$s-${p1[$s]}.out
    if [ $s = sample ]; then
      expect_line "$out" "\] tasks: 1 \(1 per node\)"
    else
      expect_line "$out" "\] tasks: 2 \($per_node per node\)"
    fi
    expect_line "$out" "done \(status 0\)"
    if [ -n "$prev" ]; then
      local ended started
      ended=$(job_end "${p1[$prev]}")
      started=$(first_start "$out")
      if [ "$ended" -gt 0 ] && [ "$started" -ge "$ended" ]; then
        say "  ok: $s started $((started - ended)) s after $prev ended"
      else
        fail "$s (job ${p1[$s]}) started at $started, before $prev (job ${p1[$prev]}) ended at $ended"
      fi
    fi
    prev=$s
  done
  expect_line "logs/vavae-train-vae-${p1[train-vae]}.out" "training on 2 rank\(s\)"
  [ "$nodes" = 2 ] && expect_line "logs/vavae-train-dit-$dit.out" \
    "layout: 2 ranks on 2 nodes: node1 rank 0 \(local 0\), node2 rank 1 \(local 0\)"
  expect_line "logs/vavae-train-dit-$dit.out" "checkpointed and stopped \(status 75\): requeueing job $dit"
  expect_line "$run1/dit/logs/rank-0.log" "resumed from .*/checkpoints/step-[0-9]+\.h5 at step [1-9]"
  expect_steps "$run1/dit/metrics.jsonl" $dit_steps
  for f in vae/models/final_model.h5 latent_features/train.h5 latent_features/val.h5 dit/models/final_model.h5 \
    samples/grid.png samples/user01_000.png samples/user04_000.png; do
    [ -s "$run1/$f" ] || fail "pipeline 1 wrote no $run1/$f"
  done
  # The sample stage read the DiT as it was after its resumed run.
  [ "$run1/samples/grid.png" -nt "$run1/dit/models/final_model.h5" ] ||
    fail "samples/grid.png is older than the DiT it came from"

  # Pipeline 2: stops at the failed stage; the rest are cancelled unstarted.
  expect_job "${p2[extract]}" FAILED 2:0 0
  expect_line "logs/vavae-extract-${p2[extract]}.out" "failed with status 2; not requeueing"
  for s in train-dit sample; do
    expect_job "${p2[$s]}" CANCELLED 0:0 0
    if [ -e "logs/vavae-$s-${p2[$s]}.out" ]; then fail "pipeline 2: $s ran after a failed stage"; else
      say "  ok: pipeline 2: $s (job ${p2[$s]}) never started"
    fi
  done
}

# Folds as separate jobs and the report after them, as docs/carotid.md chains them
# (there with jobs/carotid.toml and 5 folds): on persons made from
# Fashion-MNIST (T-shirts against trousers), one epoch a fold.
case_cv() {
  local fixture=$build/tests/vavae_fashion_mnist_split data=$tmp/cv-data cv=$tmp/run-cv k
  [ -x "$build/apps/carotid" ] || skip "no $build/apps/carotid: build it first"
  [ -x "$fixture" ] || skip "no $fixture: build the tests first"
  python3 "$repo/tests/kaggle/make_data.py" "$fixture" /usr/share/datasets/fashion-mnist "$data" \
    >"$tmp/fixture.txt" 2>&1
  case $? in
    0) ;;
    77) skip "no Fashion-MNIST (apt-get install dataset-fashion-mnist, or env/setup.sh --tests)" ;;
    *) cat "$tmp/fixture.txt"; fail "writing the carotid persons failed"; return ;;
  esac
  local job=("$repo/jobs/carotid-tiny.toml" --root-dir "$data/carotid/images"
    --label-excel "$data/carotid/labels.csv" --epochs 1 --set data.cache_dir="$tmp/image-cache")
  local ids=() report
  for k in 0 1 2; do
    ids+=("$(sbatch --parsable --job-name=cv-$k --ntasks-per-node=2 "${cpu_only[@]}" "$repo/slurm/train.sh" \
      carotid "${job[@]}" cv --folds 3 --fold $k --run-dir "$cv")")
  done
  report=$(sbatch --parsable --job-name=cv-report --ntasks-per-node=1 "${cpu_only[@]}" \
    --dependency=afterok:"$(IFS=: && echo "${ids[*]}")" "$repo/slurm/train.sh" carotid cv-report --run-dir "$cv")
  say "folds ${ids[*]}, report $report; waiting"
  wait_jobs "${ids[@]}" "$report"

  local last_end=0 end
  for k in 0 1 2; do
    expect_job "${ids[k]}" COMPLETED 0:0 0
    expect_line "logs/cv-$k-${ids[k]}.out" "fold $k of 3: training in $cv/fold-$k"
    [ -s "$cv/fold-$k/models/best_model.h5" ] || fail "fold $k wrote no models/best_model.h5"
    end=$(job_end "${ids[k]}")
    [ "$end" -gt "$last_end" ] && last_end=$end
  done
  expect_job "$report" COMPLETED 0:0 0
  local started
  started=$(first_start "logs/cv-report-$report.out")
  if [ "$last_end" -gt 0 ] && [ "$started" -ge "$last_end" ]; then
    say "  ok: cv-report started $((started - last_end)) s after the last fold ended"
  else
    fail "cv-report started at $started, before the last fold ended at $last_end"
  fi
  expect_line "logs/cv-report-$report.out" "person_auc .* ± "
  local f
  for f in cv_report.json cv_report.txt test_report.json test_predictions.csv roc_curve.png confusion_matrix.png; do
    [ -s "$cv/$f" ] || fail "cv-report wrote no $cv/$f"
  done
  local persons
  persons=$(tail -n +2 "$cv/test_predictions.csv" | cut -d, -f2 | sort -u | wc -l)
  [ "$persons" = 40 ] || fail "the pooled predictions hold $persons persons, wanted the 40 of the sheet"
}

# Two hosts as a cluster's nodes: the same summarize job on 2 nodes x 1 rank,
# 1 node x 2 ranks and 2 nodes x 2 ranks, with one global batch: each run
# names its hosts and local ranks, their losses agree step by step (the
# world-size invariance the trainer promises), and only the 2-node runs move
# their gradients over node1's link. Then a 2-node job is preempted.
case_multinode() {
  local common=("${tiny[@]}" --set train.max_steps=6 --set train.micro_batch=2 --set train.global_batch=8)
  local compare=$build/tests/compare_runs name layout id before bytes out
  [ -x "$compare" ] || skip "no $compare: build the tests first"
  local -A job traffic
  for name in 2x1 1x2 2x2; do
    case $name in
      2x1) layout=(--nodes=2 --ntasks-per-node=1) ;;
      1x2) layout=(--nodes=1 --ntasks-per-node=2) ;;
      2x2) layout=(--nodes=2 --ntasks-per-node=2) ;;
    esac
    for attempt in 1 2; do
      before=$(cluster_link_bytes 1)
      say "$name: sbatch ${layout[*]} slurm/train.sh summarize jobs/summarize-tiny.toml, 6 steps, global batch 8"
      id=$(sbatch --parsable --job-name="mn-$name" "${layout[@]}" "${cpu_only[@]}" "$repo/slurm/train.sh" summarize \
        "${common[@]}" --set train.out_dir="$tmp/run-$name")
      wait_jobs "$id"
      [ $attempt = 1 ] && crashed_in_start_up "$id" "logs/mn-$name-$id.out" || break
      say "FLAKE: job $id: a rank died of SIGSEGV inside MPI start-up, before tandem's first line (known on this" \
        "test cluster, not understood: see crashed_in_start_up); submitting it once more"
      rm -rf "$tmp/run-$name"
    done
    bytes=$(($(cluster_link_bytes 1) - before))
    job[$name]=$id traffic[$name]=$bytes
    expect_job "$id" COMPLETED 0:0 0
    expect_steps "$tmp/run-$name/metrics.jsonl" 6
    say "  $name: node1's link carried $((bytes / 1024)) KiB"
    if grep -q "SLURM_LOCALID is" "logs/mn-$name-$id.out" "$tmp/run-$name"/logs/rank-*.log; then
      fail "$name: a rank's SLURM_LOCALID disagrees with MPI's local rank"
    fi
  done
  expect_line "logs/mn-2x1-${job[2x1]}.out" "layout: 2 ranks on 2 nodes: node1 rank 0 \(local 0\), node2 rank 1 \(local 0\)"
  expect_line "logs/mn-1x2-${job[1x2]}.out" "layout: 2 ranks on 1 node: node1 ranks 0-1 \(local 0-1\)"
  expect_line "logs/mn-2x2-${job[2x2]}.out" \
    "layout: 4 ranks on 2 nodes: node1 ranks 0-1 \(local 0-1\), node2 ranks 2-3 \(local 0-1\)"
  expect_line "logs/mn-2x2-${job[2x2]}.out" "tasks: 4 \(2\(x2\) per node\)"
  # The gradients go over the link on two nodes, through shared memory on one:
  # a 2-node run moves many times what the 1-node run's control traffic does.
  if [ "${traffic[2x1]}" -gt $((10 * ${traffic[1x2]})) ] && [ "${traffic[2x2]}" -gt $((10 * ${traffic[1x2]})) ]; then
    say "  ok: node1's link: 2x1 ${traffic[2x1]} B, 2x2 ${traffic[2x2]} B, 1x2 ${traffic[1x2]} B"
  else
    fail "node1's link: 2x1 ${traffic[2x1]} B, 2x2 ${traffic[2x2]} B, not 10x the 1x2 run's ${traffic[1x2]} B"
  fi
  for name in 2x1 2x2; do
    "$compare" losses "$tmp/run-1x2/metrics.jsonl" "$tmp/run-$name/metrics.jsonl" 1e-5 ||
      fail "$name's losses differ from 1x2's"
  done

  # envcheck on 2 x 2: the per-node layout, and MPI's bandwidth inside a node
  # apart from between the nodes.
  id=$(sbatch --parsable --job-name=mn-envcheck --nodes=2 --ntasks-per-node=2 "${cpu_only[@]}" \
    "$repo/slurm/train.sh" envcheck --test --set envcheck.max_mb=4 --set envcheck.iters=5)
  wait_jobs "$id"
  expect_job "$id" COMPLETED 0:0 0
  out=logs/mn-envcheck-$id.out
  expect_line "$out" "^Nodes: 2$"
  expect_line "$out" "^  node1 +ranks +0-1 +local 0-1 +GPUs 0$"
  expect_line "$out" "^  node2 +ranks +2-3 +local 0-1 +GPUs 0$"
  expect_line "$out" "^Bandwidth within a node: allreduce\(sum\), f32, the 2 ranks of node1, MPI"
  expect_line "$out" "^Bandwidth between nodes: allreduce\(sum\), f32, one rank on each of 2 nodes, MPI"
  [ "$(grep -c "average busbw" "$out")" = 5 ] ||
    fail "envcheck printed $(grep -c "average busbw" "$out") bandwidth tables, wanted 5 (3 collectives, 2 links)"

  # Preempted on two nodes, started by srun and by Open MPI's mpirun (which
  # starts its daemons on the allocation's nodes through Slurm): each start of
  # the job is on both hosts.
  local launcher starts
  run_preempt auto --batch --nodes=2 --ntasks-per-node=1
  run_preempt mpirun --full --nodes=2 --ntasks-per-node=1
  for launcher in auto mpirun; do
    starts=$(grep -c "layout: 2 ranks on 2 nodes: node1 rank 0 (local 0), node2 rank 1 (local 0)" \
      "$tmp/run-preempt-$launcher/logs/rank-0.log")
    [ "$starts" = 2 ] || fail "$launcher: the preempted job did not start on the 2 nodes twice ($starts layout lines)"
  done

  # A node lost mid-run: the job ends, never hangs. Rank 0's watchdog names the
  # collective nobody finishes after dist.timeout_s, train.sh names the node
  # that no longer answers and its rank. With node2 back, the same command
  # resumes from the last checkpoint and completes.
  local run=$tmp/run-lost timeout_s=15 out killed_at ended_at last resumed
  local lost=(--job-name=lost --nodes=2 --ntasks-per-node=1 "${cpu_only[@]}" "$repo/slurm/train.sh" summarize
    "${tiny[@]}" --set train.max_steps=16 --set train.ckpt_every=2 --set dist.timeout_s=$timeout_s
    --set train.out_dir="$run")
  id=$(sbatch --parsable "${lost[@]}")
  # The start-up crash the layout jobs retry (crashed_in_start_up), once.
  if ! steps_logged "$run/metrics.jsonl" 5 "$id"; then
    wait_jobs "$id"
    crashed_in_start_up "$id" "logs/lost-$id.out" || { fail "job $id never logged 5 steps in $run/metrics.jsonl"; return; }
    say "FLAKE: job $id: a rank died of SIGSEGV inside MPI start-up (see crashed_in_start_up); submitting it once more"
    rm -rf "$run"
    id=$(sbatch --parsable "${lost[@]}")
    wait_steps "$run/metrics.jsonl" 5 "$id" || return
  fi
  killed_at=$(date +%s)
  say "job $id at step $(loss_steps "$run/metrics.jsonl" | wc -w): node2 lost (everything on it killed)"
  cluster_kill_node 2
  out=logs/lost-$id.out
  # Once train.sh is done, node2 comes back at once: slurmctld would otherwise
  # hold the job (completing) until it declares node2 down, a minute later.
  while [ $SECONDS -lt $deadline ] && ! grep -q "failed with status" "$out" 2>/dev/null; do sleep 1; done
  say "node2 back (its slurmd started again)"
  cluster_start_slurmd 2
  wait_jobs "$id"
  expect_job "$id" FAILED 3:0 0
  expect_line "$out" "watchdog: .* on rank 0 has not finished after [0-9]+ s \(dist.timeout_s\)"
  expect_line "$out" "node node2 \(rank 1\) does not answer: it was lost"
  ended_at=$(date -d "$(sed -nE 's/^\[train\.sh ([0-9-]+ [0-9:]+)\] failed with status.*/\1/p' "$out")" +%s 2>/dev/null ||
    echo 0)
  if [ "$ended_at" -ge "$killed_at" ] && [ $((ended_at - killed_at)) -le $((timeout_s + 60)) ]; then
    say "  ok: train.sh ended $((ended_at - killed_at)) s after node2 was lost (dist.timeout_s = $timeout_s)"
  else
    fail "train.sh ended at $ended_at, node2 lost at $killed_at: not within dist.timeout_s + 60 s"
  fi
  last=$(cd "$run/checkpoints" && ls step-*.h5 | sort | tail -n 1)
  say "the same job submitted again"
  while [ $SECONDS -lt $deadline ] && [ "$(sinfo -h -n node2 -o %T)" != idle ]; do sleep 1; done
  id=$(sbatch --parsable "${lost[@]}")
  wait_jobs "$id"
  expect_job "$id" COMPLETED 0:0 0
  expect_line "logs/lost-$id.out" "done: 16 steps"
  resumed=$(sed -nE 's/.*resumed from .*\/(step-[0-9]+\.h5) at step.*/\1/p' "$run/logs/rank-0.log" | tail -n 1)
  if [ -n "$last" ] && [ "$resumed" = "$last" ]; then say "  ok: resumed from $last, the last checkpoint"; else
    fail "resumed from '$resumed', not from the last checkpoint '$last'"
  fi
}

# USR1 to a job submitted with --no-requeue, and a plain scancel (SIGTERM):
# both checkpoint and end with status 75; neither is requeued.
run_stop_variants() {
  local id out run
  for variant in no-requeue cancel; do
    run=$tmp/run-$variant
    if [ $variant = no-requeue ]; then
      id=$(sbatch --parsable --job-name=$variant --no-requeue --ntasks-per-node=2 "${cpu_only[@]}" \
        "$repo/slurm/train.sh" summarize train "${tiny[@]}" --set train.max_steps=40 --set train.out_dir="$run")
    else
      id=$(sbatch --parsable --job-name=$variant --ntasks-per-node=2 "${cpu_only[@]}" \
        "$repo/slurm/train.sh" summarize train "${tiny[@]}" --set train.max_steps=40 --set train.out_dir="$run")
    fi
    out=logs/$variant-$id.out
    wait_steps "$run/metrics.jsonl" 2 "$id" || return
    if [ $variant = no-requeue ]; then
      say "$variant: job $id submitted with --no-requeue: scancel --signal=USR1 --batch $id"
      scancel --signal=USR1 --batch "$id"
    else
      say "$variant: scancel $id (SIGTERM)"
      scancel "$id"
    fi
    wait_jobs "$id"
    if [ $variant = no-requeue ]; then
      expect_job "$id" FAILED 75:0 0
      expect_line "$out" "scontrol requeue failed \(submitted with --no-requeue\?\)"
    else
      expect_job "$id" CANCELLED 75:0 0
      expect_line "$out" "stopped by SIGTERM after a checkpoint \(status 75\): not requeueing"
    fi
    expect_line "$out" "checkpointing at step [0-9]+ and exiting with status 75"
    if compgen -G "$run/checkpoints/step-*.h5" >/dev/null; then
      say "  ok: $(cd "$run" && echo checkpoints/step-*.h5)"
    else
      fail "$variant: no checkpoint in $run"
    fi
  done
}

case $case_name in
  train) case_train ;;
  preempt)
    run_preempt auto --batch
    run_stop_variants
    ;;
  preempt-mpirun) run_preempt mpirun --full ;;
  preempt-before-launch) case_preempt_before_launch ;;
  pipeline) case_pipeline ;;
  cv) case_cv ;;
  multinode) case_multinode ;;
  multinode-pipeline) case_pipeline ;;
  *)
    echo "unknown case '$case_name'"
    exit 2
    ;;
esac
