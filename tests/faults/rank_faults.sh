#!/usr/bin/env bash
# rank_faults.sh kill|stop TOY COMPARE MPIEXEC [TRIALS] [SEED]: a rank of a
# 2-rank training run (tests/progs/toy_train) fails at a random moment,
# TRIALS times (default 20): `kill` sends it SIGKILL, `stop` SIGSTOP (a rank
# that hangs). Every other trial the moment is "while rank 0 writes a
# checkpoint" (its temporary file exists), and rank 0 is the one hit. Each
# trial must end non-zero within dist.timeout_s plus a margin, never hang; a
# stopped rank must be caught by the other's watchdog, or by its start-up
# deadline while MPI starts, or by its shut-down deadline once the training is
# over (exit 3); one stopped inside MPI_Finalize after the others have left it
# is the launcher's alone to wait for, and is let go on (SIGCONT), the run
# ending 0. Then
# `resume = "auto"` must finish the run bitwise equal to one never
# interrupted (fp32 on CPU). Prints a row per trial; exits 1 at the first
# trial that fails. ctest runs 4 trials of each (label faults); by hand:
#   tests/faults/rank_faults.sh kill build/tests/toy_train build/tests/compare_runs mpiexec 20
set -euo pipefail
fault=$1 toy=$(realpath "$2") compare=$(realpath "$3") mpiexec=$4 trials=${5:-20} seed=${6:-$$}
case $fault in kill) signal=KILL ;; stop) signal=STOP ;; *) echo "rank_faults.sh: kill or stop, not '$fault'" >&2; exit 2 ;; esac
work=$(mktemp -d)
trap 'pkill -KILL -f "$work/" 2>/dev/null || true; rm -rf "$work"' EXIT
cd "$work"
RANDOM=$seed
timeout_s=10
# A wide hidden layer makes each checkpoint about 25 MB, so a write takes long
# enough to be caught in the middle.
common=(--set obs.gpu_every_s=0 --set train.max_steps=24 --set train.global_batch=8 --set train.ckpt_every=3
        --set toy.hidden=262144 --set dist.timeout_s=$timeout_s)
# start_within S ARGS: a 2-rank run whose MPI start-up must end within S s.
# The run a fault hits gets timeout_s: its deadline is under test (a rank
# stopped while MPI starts). The runs no fault reaches (the reference, the
# resumed ones) get 120 s: beside ctest's other job on 2 cores MPI once took
# over 10 s to start a resumed run (a clean-clone env/test.sh, 2026-11-26),
# and 120 s still ends a start-up that hangs.
start_within() { TANDEM_START_TIMEOUT_S=$1 "$mpiexec" -n 2 "$toy" "${common[@]}" "${@:2}"; }

started=$(date +%s%N)
start_within 120 --set train.out_dir="$work/straight" >"$work/straight.log" 2>&1 || { tail -20 "$work/straight.log"; exit 1; }
# The random moments fall within three quarters of the reference run's length,
# start-up included (they count from when the ranks are found, later than the
# launch): on a fast machine a fixed span would put most of them after the end.
span_ms=$(( ($(date +%s%N) - started) / 1000000 ))
echo "$fault, seed $seed; reference run done in $span_ms ms"
echo "| trial | moment | SIG$signal to | exit | s to exit | resumed from | final model |"
echo "|---|---|---|---|---|---|---|"
for trial in $(seq 1 "$trials"); do
  dir="$work/t$trial"
  start_within $timeout_s --set train.out_dir="$dir" >"$dir.log" 2>&1 &
  launcher=$!
  # The ranks by their rank (not the launcher, whose command line starts with
  # mpiexec), found before the moment so that the signal follows it at once.
  ranks=()
  for _ in $(seq 1 100); do
    for pid in $(pgrep -f -- "^$toy .*train.out_dir=$dir\$" || true); do
      r=$(tr '\0' '\n' <"/proc/$pid/environ" 2>/dev/null | sed -n 's/^OMPI_COMM_WORLD_RANK=//p')
      [ -n "$r" ] && ranks[$r]=$pid
    done
    [ ${#ranks[@]} -eq 2 ] || ! kill -0 $launcher 2>/dev/null && break
    sleep 0.05
  done
  if (( trial % 2 == 0 )); then
    # While the n-th checkpoint (step 3n) is being written.
    n=$(( RANDOM % 4 + 1 ))
    moment="writing step $(( 3 * n ))"
    until compgen -G "$dir/checkpoints/.step-$(printf %08d $(( 3 * n ))).h5.tmp-*" >/dev/null ||
          ! kill -0 $launcher 2>/dev/null; do :; done
  else
    delay_ms=$(( (RANDOM * 32768 + RANDOM) % (span_ms * 3 / 4 + 1) ))
    delay="$(( delay_ms / 1000 )).$(printf %03d $(( delay_ms % 1000 )))"
    moment="$delay s"
    sleep "$delay"
  fi
  if [[ $moment == writing* ]]; then victim=0; else victim=$(( RANDOM % 2 )); fi
  killed_at=$(date +%s%N)
  if [ -n "${ranks[$victim]:-}" ] && kill -$signal "${ranks[$victim]}" 2>/dev/null; then
    killed="rank $victim"
  else
    killed="none (run over)"
  fi
  # kill succeeds on a rank that has already returned from main and is
  # exiting or a zombie: such a rank never stops, and the run rightly ends 0
  # (CI saw it once, the 4 s moment being past the end of a fast run). A
  # stopped rank shows state T within moments; an exiting one turns zombie
  # or is reaped.
  if [ $fault = stop ] && [ "$killed" != "none (run over)" ]; then
    state=
    for _ in $(seq 1 40); do
      state=$(sed 's/.*) //' "/proc/${ranks[$victim]}/stat" 2>/dev/null | cut -d' ' -f1 || true)
      [[ $state == [TtZX] || -z $state ]] && break
      sleep 0.05
    done
    if [[ $state == [ZX] || -z $state ]]; then killed="none (run over)"; fi
  fi
  # A rank stopped once its work is over (inside MPI_Finalize or past it) can
  # be noticed by no other: they have left MPI_Finalize and exited 0, which
  # they do only after every rank has entered it (World's barrier), so it
  # is the launcher alone that waits. That is the one stop allowed to end 0:
  # seen as the other rank gone for 3 s while the launcher stays (had it
  # exited non-zero, the launcher would have ended the job at once).
  other=${ranks[$(( 1 - victim ))]:-} gone_for=0
  status=0
  for _ in $(seq 1 $(( (timeout_s + 30) * 10 ))); do
    kill -0 $launcher 2>/dev/null || break
    if [ $fault = stop ] && [ "$killed" != "none (run over)" ] && [ -n "$other" ] && ! kill -0 "$other" 2>/dev/null; then
      gone_for=$(( gone_for + 1 ))
      if (( gone_for >= 30 )); then killed="rank $victim, after its work"; kill -CONT "${ranks[$victim]}"; break; fi
    fi
    sleep 0.1
  done
  [[ $killed == *"after its work" ]] && for _ in $(seq 1 300); do kill -0 $launcher 2>/dev/null || break; sleep 0.1; done
  if kill -0 $launcher 2>/dev/null; then
    echo "| $trial | $moment | $killed | hung | > $((timeout_s + 30)) | | |"
    echo "FAIL: trial $trial did not end within dist.timeout_s + 30 s"; tail -20 "$dir.log"; exit 1
  fi
  wait $launcher || status=$?
  took_ms=$(( ($(date +%s%N) - killed_at) / 1000000 ))
  if [[ $killed == *"after its work" ]]; then
    if [ $status -ne 0 ]; then echo "FAIL: trial $trial: $killed, continued, but the run exited $status"; exit 1; fi
  elif [ "$killed" != "none (run over)" ] && [ $status -eq 0 ]; then
    echo "FAIL: trial $trial: $killed got SIG$signal but the run exited 0"; tail -20 "$dir.log"; exit 1
  fi
  if [ "$killed" != "none (run over)" ] && [[ $killed != *"after its work" ]] && [ $fault = stop ] &&
     { [ $status -ne 3 ] ||
       ! grep -qE "watchdog: .* on rank $(( 1 - victim )) has not finished after|MPI start-up has not finished|MPI shut-down has not finished .*, rank $(( 1 - victim )):" \
         "$dir.log"; }; then
    echo "FAIL: trial $trial: neither rank $(( 1 - victim ))'s watchdog nor its start-up or shut-down deadline ended the job (exit $status)"
    tail -20 "$dir.log"; exit 1
  fi
  resume_log="$dir.resume.log"
  if ! start_within 120 --set train.out_dir="$dir" >"$resume_log" 2>&1; then
    echo "FAIL: trial $trial: the resumed run failed"; tail -20 "$resume_log"; exit 1
  fi
  from=$(grep -o "resumed from [^ ]* at step [0-9]*" "$resume_log" | sed 's/.* at step /step /' | head -1 || true)
  if ! "$compare" models "$work/straight/models/final_model.h5" "$dir/models/final_model.h5" 0 >/dev/null 2>&1; then
    echo "FAIL: trial $trial: the resumed run does not end where an uninterrupted one does"; exit 1
  fi
  printf '| %s | %s | %s | %s | %d.%d | %s | bitwise equal |\n' "$trial" "$moment" "$killed" "$status" \
    $(( took_ms / 1000 )) $(( took_ms % 1000 / 100 )) "${from:-none (started over)}"
  rm -rf "$dir" "$dir.log" "$resume_log"
done
echo "PASS: $fault, $trials trials, none hung, every resumed run ended bitwise equal"
