#!/bin/bash
# env/launch_lib.sh, the library kaggle/run.sh and slurm/train.sh share, on
# its own: no MPI, no Slurm, no root. A stand-in for the ranks (Python, which
# can handle SIGINT that bash's background jobs start with ignored) writes down
# each signal it receives.
#
#   tests/launch/launch_lib_test.sh REPO
#
# Signals: one before the start starts nothing (status 75); TERM wins over
# USR1; one after the start reaches the stand-in exactly once; the first INT
# goes as USR1, a second as INT; the status is the stand-in's own after a
# trapped signal interrupted the wait. Then the bare JOB.toml -> --config rule
# (the repository's file when the current directory lacks it, a missing file's
# message and status 2), the Open MPI command line and the app names.
set -uo pipefail
repo=$(cd "${1:?usage: launch_lib_test.sh REPO}" && pwd)
lib=$repo/env/launch_lib.sh

tmp=$(mktemp -d /tmp/tandem-launch.XXXXXX)
# shellcheck source=tests/lib/harness.sh
source "$repo/tests/lib/harness.sh"
trap 'harness_finish $?' EXIT

# stand-in LOG READY STATUS_AFTER_SIGNAL STATUS: appends each signal's name to
# LOG; once one came, lingers 1 s (a second delivery would be written down)
# and exits STATUS_AFTER_SIGNAL; without one, exits STATUS after 0.3 s.
cat >"$tmp/standin.py" <<'EOF'
import signal, sys, time
log, ready, after, plain = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
got = []
def on(sig, _):
    with open(log, "a") as f:
        f.write(signal.Signals(sig).name + "\n")
    got.append(sig)
for s in (signal.SIGUSR1, signal.SIGTERM, signal.SIGINT):
    signal.signal(s, on)
open(ready, "w").close()
end = time.time() + 0.3
while time.time() < end or (got and time.time() < end + 10):
    if got:
        time.sleep(1)
        sys.exit(after)
    time.sleep(0.02)
sys.exit(plain)
EOF

# scenario NAME SCRIPT: SCRIPT in a bash of its own (SIGINT at its default, as
# a notebook's cell has it) with the library sourced, $S the stand-in's
# command prefix, $L its log, $R its ready file; output in $out, status in $status.
scenario() {
  local name=$1
  printf '%s\n' "source '$lib'" "LAUNCH_NAME=test" "S=(python3 '$tmp/standin.py' '$tmp/$name.log' '$tmp/$name.ready')" \
    "L='$tmp/$name.log' R='$tmp/$name.ready'" "$2" >"$tmp/$name.sh"
  python3 -c 'import os, signal, sys
signal.signal(signal.SIGINT, signal.SIG_DFL)
os.execvp("bash", ["bash", sys.argv[1]])' "$tmp/$name.sh" >"$tmp/$name.out" 2>&1
  status=$?
  out=$tmp/$name.out
  echo "-- $name (status $status)"
  sed 's/^/    | /' "$out"
}
expect() { # expect REGEX...: lines of the last output
  local r
  for r in "$@"; do grep -Eq -- "$r" "$out" || fail "no line matches: $r"; done
}
expect_signals() { # expect_signals NAME WANT: the stand-in's log, one name a line joined by spaces
  local got
  got=$(tr '\n' ' ' <"$tmp/$1.log" 2>/dev/null)
  [ "${got% }" = "$2" ] || fail "$1: the stand-in received '${got% }', wanted '$2'"
}
# The helper the scenarios start in the background: once the stand-in is
# ready, the signals to the launcher ($$), as a user or Slurm would send them.
after_ready='until [ -e "$R" ]; do sleep 0.02; done'

scenario before-start '
launch_trap_signals USR1 TERM
kill -USR1 $$
launch_run "${S[@]}" 0 0
echo "status=$? LAUNCH_STATUS=$LAUNCH_STATUS stop=$LAUNCH_STOP child=$LAUNCH_CHILD"'
expect "^test: received SIGUSR1 before the job started: not starting it$" \
  "^test: stopped by SIGUSR1 before the job started: nothing ran \(status 75\)$" \
  "^status=75 LAUNCH_STATUS=75 stop=USR1 child=$"
[ ! -e "$tmp/before-start.ready" ] || fail "before-start: the stand-in was started"

# An interrupt kills the build step with the launcher (a notebook's stop
# button, ^C): the step's failure is the stop's doing, so 75, not 2.
scenario stopped-step '
launch_trap_signals INT TERM USR1
kill -INT $$
launch_die 2 "build of APP failed"'
expect "^test: error: build of APP failed$" "^test: stopped by SIGINT before the job started: nothing ran \(status 75\)$"
[ "$status" = 75 ] || fail "stopped-step: status $status, not 75"
scenario plain-die '
launch_trap_signals INT TERM USR1
launch_die 2 "bad input"'
[ "$status" = 2 ] || fail "plain-die: status $status, not 2"

scenario term-wins '
launch_trap_signals USR1 TERM
kill -USR1 $$
kill -TERM $$
kill -USR1 $$
launch_run "${S[@]}" 0 0
echo "status=$? stop=$LAUNCH_STOP"'
expect "^test: stopped by SIGTERM before the job started" "^status=75 stop=TERM$"
[ ! -e "$tmp/term-wins.ready" ] || fail "term-wins: the stand-in was started"

scenario after-start '
launch_trap_signals USR1 TERM
('"$after_ready"'; kill -USR1 $$) &
launch_run "${S[@]}" 75 0
echo "status=$? stop=$LAUNCH_STOP"'
expect "^test: received SIGUSR1: forwarding it to the ranks \(they checkpoint and stop\)$" "^status=75 stop=USR1$"
expect_signals after-start SIGUSR1

scenario own-status '
launch_trap_signals USR1 TERM
('"$after_ready"'; kill -TERM $$) &
launch_run "${S[@]}" 0 0
echo "status=$? stop=$LAUNCH_STOP"'
expect "^status=0 stop=TERM$"
expect_signals own-status SIGTERM

scenario plain-status '
launch_trap_signals USR1 TERM
launch_run "${S[@]}" 0 3
echo "status=$? LAUNCH_STATUS=$LAUNCH_STATUS stop=$LAUNCH_STOP"'
expect "^status=3 LAUNCH_STATUS=3 stop=$"

scenario interrupts '
launch_trap_signals INT TERM USR1
('"$after_ready"'; kill -INT $$; until grep -q SIGUSR1 "$L" 2>/dev/null; do sleep 0.02; done; kill -INT $$) &
launch_run "${S[@]}" 75 0
echo "status=$? stop=$LAUNCH_STOP"'
expect "^test: interrupted: the ranks checkpoint and stop \(interrupt again to stop at once\)$" \
  "^test: interrupted again: stopping the ranks at once$" "^status=75 stop=INT$"
expect_signals interrupts "SIGUSR1 SIGINT"

scenario dated-lines '
LAUNCH_DATES=1 launch_say hello
launch_say plain'
expect "^\[test [0-9]{4}-[0-9]{2}-[0-9]{2} [0-9]{2}:[0-9]{2}:[0-9]{2}\] hello$" "^test: plain$"

# --- the bare JOB.toml -> --config rule, from a folder without jobs/ ------------
mkdir -p "$tmp/work/local"
touch "$tmp/work/local/mine.toml"
job_args() { # job_args ARGS...: LAUNCH_ARGS, one a line, in $out; status in $status
  (cd "$tmp/work" && source "$lib" && LAUNCH_NAME=test && launch_job_args "$@" &&
    printf '%s\n' "${LAUNCH_ARGS[@]}") >"$tmp/args.out" 2>&1
  status=$?
  out=$tmp/args.out
}
expect_args() { # expect_args WANT...: the last job_args gave exactly WANT
  local want
  want=$(printf '%s\n' "$@")
  if [ $status -ne 0 ] || [ "$(cat "$out")" != "$want" ]; then
    fail "job args: status $status, got [$(tr '\n' ' ' <"$out")], wanted [$*]"
  fi
}
job_args -- train jobs/summarize-tiny.toml --set data.file=x.toml
expect_args train --config "$repo/jobs/summarize-tiny.toml" --set data.file=x.toml
job_args -- local/mine.toml --config=jobs/summarize-tiny.toml
expect_args --config local/mine.toml "--config=$repo/jobs/summarize-tiny.toml"
job_args -- --config jobs/summarize-tiny.toml "$repo/jobs/vavae-tiny.toml"
expect_args --config "$repo/jobs/summarize-tiny.toml" --config "$repo/jobs/vavae-tiny.toml"
job_args --no-check -- nowhere.toml
expect_args --config nowhere.toml
for missing in "nowhere.toml" "--config nowhere.toml" "--config=nowhere.toml" "$tmp/nowhere.toml"; do
  # shellcheck disable=SC2086  # the case's words
  job_args -- train $missing
  want="^test: error: job file '${missing##*[ =]}' not found \(in $tmp/work or $repo\)$"
  if [ $status -ne 2 ] || ! grep -Eq -- "$want" "$out"; then
    fail "job args '$missing': status $status, said '$(cat "$out")'; wanted status 2 and $want"
  fi
done
echo "-- job files: $( [ $failed -eq 0 ] && echo ok)"

# --- Open MPI's command line and the app names -----------------------------------
root=
[ "$(id -u)" -eq 0 ] && root="--allow-run-as-root "
got=$(source "$lib" && NCCL_TEST_SET=1 && export NCCL_TEST_SET && TORCH_NOT_EXPORTED=1 &&
  launch_openmpi_cmd cmd mpirun 2 --map-by-slot --export-vars && echo "${cmd[*]}")
[[ "$got" == "mpirun ${root}-np 2 --map-by slot "*"-x NCCL_TEST_SET"*" --bind-to none" && $got != *TORCH_NOT_EXPORTED* ]] ||
  fail "launch_openmpi_cmd: '$got'"
got=$(source "$lib" && launch_openmpi_cmd cmd /b/mpirun 1 && echo "${cmd[*]}")
[ "$got" = "/b/mpirun ${root}-np 1 --bind-to none" ] || fail "launch_openmpi_cmd without options: '$got'"
echo "-- mpirun: $got"
# Oversubscription is for small machines, not a Slurm allocation's slots
# (--exact-slots), unless the user asked for it.
got=$(unset OMPI_MCA_rmaps_base_oversubscribe; source "$lib" && launch_openmpi_env &&
  echo "${OMPI_MCA_rmaps_base_oversubscribe-unset}")
[ "$got" = 1 ] || fail "launch_openmpi_env: oversubscribe '$got', not 1"
got=$(unset OMPI_MCA_rmaps_base_oversubscribe; source "$lib" && launch_openmpi_env --exact-slots &&
  echo "${OMPI_MCA_rmaps_base_oversubscribe-unset}")
[ "$got" = unset ] || fail "launch_openmpi_env --exact-slots: oversubscribe '$got', not unset"
got=$(export OMPI_MCA_rmaps_base_oversubscribe=1; source "$lib" && launch_openmpi_env --exact-slots &&
  echo "${OMPI_MCA_rmaps_base_oversubscribe-unset}")
[ "$got" = 1 ] || fail "launch_openmpi_env --exact-slots dropped the user's oversubscribe: '$got'"

apps=$(source "$lib" && launch_app_names | xargs)
for a in $apps; do [ -f "$repo/apps/$a/main.cpp" ] || fail "launch_app_names: '$a' has no apps/$a/main.cpp"; done
[[ " $apps " == *" summarize "* && " $apps " == *" envcheck "* ]] || fail "launch_app_names: '$apps'"
echo "-- apps: $apps"
