# Sourced, not run: the checks an e2e test makes on a program as users run it,
# shared by expect.sh (one command per ctest test) and the scripts that set up
# a case before checking it (tests/*/e2e/bad_input.sh). Each check prints
# "NAME: what went wrong" and returns 1, so a failure names the case it is in.

# expect_run NAME STATUS REGEX... -- COMMAND...
# Runs COMMAND and prints its combined output; passes when it exits with
# STATUS ("nonzero" for any failure) and some line of the output matches each
# extended REGEX. ctest's own PASS_REGULAR_EXPRESSION ignores the exit status,
# which is half of what a user relies on.
expect_run() {
  local name=$1 want=$2
  shift 2
  local regexes=()
  while [ $# -gt 0 ] && [ "$1" != "--" ]; do regexes+=("$1"); shift; done
  if [ $# -lt 2 ]; then
    echo "$name: usage: expect_run NAME STATUS REGEX... -- COMMAND..."
    return 1
  fi
  shift
  local out status
  out=$("$@" 2>&1)
  status=$?
  printf '%s\n' "$out"
  if [ "$want" = nonzero ]; then
    [ "$status" -ne 0 ] || { echo "$name: wanted a failure, got status 0"; return 1; }
  elif [ "$status" -ne "$want" ]; then
    echo "$name: wanted status $want, got $status"
    return 1
  fi
  local regex
  for regex in "${regexes[@]}"; do
    if ! grep -Eq -- "$regex" <<<"$out"; then
      echo "$name: no line of the output matches: $regex"
      return 1
    fi
  done
}

# expect_nothing_written NAME DIR
# Passes when DIR is absent or empty: bad input must stop a run before it
# leaves a half-made run directory that a later run would resume from.
expect_nothing_written() {
  local name=$1 dir=$2
  if [ -d "$dir" ] && [ -n "$(ls -A "$dir")" ]; then
    echo "$name: $dir was written:"
    ls -A "$dir"
    return 1
  fi
}
