# shellcheck shell=bash
# What kaggle/run.sh and slurm/train.sh share: sourced by them (bash), it
# defines functions only. The caller sets LAUNCH_NAME (its name in messages)
# and LAUNCH_DATES=1 for dated log lines; the functions set LAUNCH_ARGS,
# LAUNCH_STOP, LAUNCH_CHILD and LAUNCH_STATUS.
#
# Signal contract. The launcher calls launch_trap_signals right after parsing
# its arguments, and starts the ranks with launch_run.
# - A stop signal that arrives before launch_run starts the ranks stops the job
#   before it starts: launch_run starts nothing, says so, and returns 75, which
#   the launcher reports as its other status-75 stops (Slurm: USR1 requeues,
#   TERM does not; Kaggle: run the cell again). A signal forwarded at launch
#   instead could reach ranks before they install their handler (after MPI
#   start-up, libcore/src/commands.cpp) and kill them, turning a requeue into
#   a failure; not starting is deterministic, and with nothing run there is
#   nothing to checkpoint.
# - A signal after the start is forwarded to the launched command once, when it
#   arrives. USR1 and TERM go as they are (the ranks checkpoint and exit 75);
#   the first INT goes as USR1 (an interrupted notebook cell: checkpoint and
#   stop), a second INT as INT (stop at once).
# - LAUNCH_STOP is the stop that decides the outcome: TERM once one came, else
#   the first signal.

# launch_say MSG...: prints MSG on stdout as "LAUNCH_NAME: MSG", or
# "[LAUNCH_NAME DATE TIME] MSG" when LAUNCH_DATES=1.
launch_say() {
  if [ "${LAUNCH_DATES:-0}" = 1 ]; then echo "[$LAUNCH_NAME $(date '+%F %T')] $*"; else echo "$LAUNCH_NAME: $*"; fi
}

# launch_die STATUS MSG...: prints "LAUNCH_NAME: error: MSG" on stderr and exits
# with STATUS; with a stop pending from before the start, with 75 instead, as
# launch_run would: an interrupt (a notebook's stop button, ^C) kills the
# install or build step under way with the launcher, and that step's failure
# is the stop's doing, not the user's input.
launch_die() {
  local status=$1
  shift
  echo "$LAUNCH_NAME: error: $*" >&2
  if [ "${launch_early:-0}" = 1 ]; then
    launch_say "stopped by SIG$LAUNCH_STOP before the job started: nothing ran (status 75)"
    exit 75
  fi
  exit "$status"
}

# launch_repo: prints the repository this library belongs to.
launch_repo() { (cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd); }

# launch_app_names: prints the apps (apps/CMakeLists.txt's tandem_app_with_lib names), one a line.
launch_app_names() {
  sed -n 's/^tandem_app_with_lib(\([A-Za-z0-9_-]*\).*/\1/p' "$(launch_repo)/apps/CMakeLists.txt"
}

# launch_job_args [--no-check] -- ARGS...: LAUNCH_ARGS = ARGS with a bare *.toml
# (not after an option) given as --config FILE; a relative job file (also after
# --config or in --config=) missing in $PWD becomes the repository's when that
# exists; without --no-check a job file missing in both ends the script (status 2).
launch_job_args() {
  local check=1 repo prev='' a file
  if [ "${1:-}" = --no-check ]; then check=0; shift; fi
  [ "${1:-}" = -- ] && shift
  repo=$(launch_repo)
  LAUNCH_ARGS=()
  for a in "$@"; do
    file=
    if [ "$prev" = --config ]; then
      file=$a
    elif [[ $a == --config=* ]]; then
      file=${a#--config=}
    elif [[ $a == *.toml && $a != -* && $prev != -* ]]; then
      LAUNCH_ARGS+=(--config)
      file=$a
    fi
    if [ -n "$file" ]; then
      if [ ! -f "$file" ] && [[ $file != /* ]] && [ -f "$repo/$file" ]; then file=$repo/$file; fi
      if [ ! -f "$file" ] && [ $check -eq 1 ]; then launch_die 2 "job file '$file' not found (in $PWD or $repo)"; fi
      if [[ $a == --config=* ]]; then LAUNCH_ARGS+=("--config=$file"); else LAUNCH_ARGS+=("$file"); fi
    else
      LAUNCH_ARGS+=("$a")
    fi
    prev=$a
  done
}

# launch_openmpi_env [--exact-slots]: exports Open MPI's settings for this
# machine (env/mpi_env.sh); with --exact-slots (a Slurm allocation) without its
# oversubscription, unless the user set it, so that more ranks than the
# allocation's slots fail instead of sharing cores.
# shellcheck source=env/mpi_env.sh
launch_openmpi_env() {
  local had=${OMPI_MCA_rmaps_base_oversubscribe+set}
  source "$(dirname "${BASH_SOURCE[0]}")/mpi_env.sh"
  if [ "${1:-}" = --exact-slots ] && [ -z "$had" ]; then unset OMPI_MCA_rmaps_base_oversubscribe; fi
}

# launch_is_open_mpi MPIRUN: status 0 when MPIRUN is Open MPI's.
launch_is_open_mpi() { [[ $("$1" --version 2>&1) == *"Open MPI"* ]]; }

# launch_openmpi_cmd ARRAY MPIRUN NP [--map-by-slot] [--export-vars]: ARRAY =
# MPIRUN [--allow-run-as-root, as root] -np NP [--map-by slot] --bind-to none
# [-x VAR for each NCCL_*, TORCH_*, TANDEM_*, HF_*, OMP_NUM_THREADS, XDG_CACHE_HOME exported].
launch_openmpi_cmd() {
  local -n launch_cmd=$1
  local opt name
  launch_cmd=("$2")
  [ "$(id -u)" -eq 0 ] && launch_cmd+=(--allow-run-as-root)
  launch_cmd+=(-np "$3")
  shift 3
  for opt in "$@"; do
    case $opt in
      # Slurm's block placement: ranks 0..k-1 on the first node, so MPI's local
      # rank equals SLURM_LOCALID.
      --map-by-slot) launch_cmd+=(--map-by slot) ;;
      --export-vars)
        # mpirun started outside the ranks' nodes passes only what -x names.
        for name in $(compgen -e); do
          case $name in NCCL_* | TORCH_* | TANDEM_* | HF_* | OMP_NUM_THREADS | XDG_CACHE_HOME) launch_cmd+=(-x "$name") ;; esac
        done
        ;;
      *) launch_die 2 "launch_openmpi_cmd: unknown option '$opt' (have: --map-by-slot, --export-vars)" ;;
    esac
  done
  # No core binding: each rank's LibTorch threads use its share of the CPUs.
  launch_cmd+=(--bind-to none)
}

# launch_trap_signals SIG...: traps each SIG (INT, TERM, USR1) as the signal
# contract above says; clears the state of an earlier launch.
launch_trap_signals() {
  local sig
  LAUNCH_STOP='' LAUNCH_CHILD='' LAUNCH_STATUS=''
  launch_started=0 launch_early=0 launch_unsent='' launch_interrupts=0
  for sig in "$@"; do
    # shellcheck disable=SC2064  # the signal's name, fixed now
    trap "launch_on_signal $sig" "$sig"
  done
}

# launch_on_signal SIG: the traps' action: records SIG, then forwards it (or keeps it for launch_run).
launch_on_signal() {
  local sig=$1 send=$1
  if [ "$sig" = TERM ] || [ -z "$LAUNCH_STOP" ]; then LAUNCH_STOP=$sig; fi
  if [ "$launch_started" = 0 ]; then
    launch_early=1
    launch_say "received SIG$sig before the job started: not starting it"
    return 0
  fi
  if [ "$sig" = INT ]; then
    launch_interrupts=$((launch_interrupts + 1))
    if [ "$launch_interrupts" -eq 1 ]; then
      send=USR1
      launch_say "interrupted: the ranks checkpoint and stop (interrupt again to stop at once)"
    else
      launch_say "interrupted again: stopping the ranks at once"
    fi
  else
    launch_say "received SIG$sig: forwarding it to the ranks (they checkpoint and stop)"
  fi
  # Between the fork and LAUNCH_CHILD=$! there is no pid yet: launch_run sends it.
  if [ -n "$LAUNCH_CHILD" ]; then kill -s "$send" "$LAUNCH_CHILD" 2>/dev/null || true; else launch_unsent=$send; fi
}

# launch_run CMD...: unless a stop came first, runs CMD in the background
# (LAUNCH_CHILD) and waits for it; LAUNCH_STATUS and the return status are CMD's own, or 75.
launch_run() {
  local again unsent
  # From here on a signal is forwarded: the check below sees every earlier one.
  launch_started=1
  if [ "$launch_early" = 1 ]; then
    launch_say "stopped by SIG$LAUNCH_STOP before the job started: nothing ran (status 75)"
    LAUNCH_STATUS=75
    return 75
  fi
  "$@" &
  LAUNCH_CHILD=$!
  if [ -n "$launch_unsent" ]; then
    unsent=$launch_unsent launch_unsent=''
    kill -s "$unsent" "$LAUNCH_CHILD" 2>/dev/null || true
  fi
  while :; do
    wait "$LAUNCH_CHILD"
    LAUNCH_STATUS=$?
    # wait returns early (status > 128) when a trapped signal arrives: wait
    # again while CMD runs on; if it ended meanwhile, one more wait gives its
    # own status (127: the first wait had it already).
    kill -0 "$LAUNCH_CHILD" 2>/dev/null && continue
    wait "$LAUNCH_CHILD" 2>/dev/null
    again=$?
    [ $again -ne 127 ] && LAUNCH_STATUS=$again
    break
  done
  return "$LAUNCH_STATUS"
}
