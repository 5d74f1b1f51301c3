#!/usr/bin/env bash
# expect.sh STATUS REGEX [REGEX...] -- COMMAND...
# Runs COMMAND; passes when it exits with STATUS ("nonzero" for any failure)
# and some line of its combined output matches each extended REGEX. ctest's own
# PASS_REGULAR_EXPRESSION ignores the exit status, which is half of what a
# user relies on.
set -uo pipefail
want=$1
shift
regexes=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do regexes+=("$1"); shift; done
shift
out=$("$@" 2>&1)
status=$?
printf '%s\n' "$out"
if [ "$want" = nonzero ]; then
  [ "$status" -ne 0 ] || { echo "expect.sh: wanted a failure, got status 0"; exit 1; }
elif [ "$status" -ne "$want" ]; then
  echo "expect.sh: wanted status $want, got $status"
  exit 1
fi
for regex in "${regexes[@]}"; do
  if ! grep -Eq -- "$regex" <<<"$out"; then
    echo "expect.sh: no line of the output matches: $regex"
    exit 1
  fi
done
