#!/bin/bash
# env/gpu-check.sh on a machine without GPU, as CI has: its CPU half passes,
# every GPU check says why it was skipped, and gpu-check.json lists the same.
#   cpu_half.sh REPO BUILD WORK PYTHON
set -uo pipefail
repo=$1 build=$2 work=$3 python=$4
fail() { echo "FAIL: $*"; exit 1; }
rm -rf "$work" && mkdir -p "$work" && cd "$work" || exit 1
out=$(TANDEM_BUILD=$build CUDA_VISIBLE_DEVICES= "$repo/env/gpu-check.sh" --quick 2>&1)
status=$?
echo "$out"
[ $status -eq 0 ] || fail "exit status $status"
table=$(sed -n '/^CHECK  /,$p' <<<"$out")
names=$(bash "$repo/env/gpu-check.sh" --only no-such-check 2>&1 | sed -n 's/.*(have: \(.*\))$/\1/p')
[ -n "$names" ] || fail "--only with an unknown name does not list the checks"
for n in $names; do
  line=$(grep -E "^$n +" <<<"$table") || fail "the table has no line for $n"
  case $n in
    cpu-*) grep -q " passed" <<<"$line" || fail "$n did not pass: $line" ;;
    *) grep -q " skipped  no GPU" <<<"$line" || fail "$n is not skipped for want of a GPU: $line" ;;
  esac
done
"$python" - "$names" <<'PY' || fail "gpu-check.json does not list the checks"
import json, sys
report = json.load(open("gpu-check.json"))
assert sorted(c["name"] for c in report["checks"]) == sorted(sys.argv[1].split()), report["checks"]
assert all(c["status"] in ("passed", "skipped") for c in report["checks"])
PY
echo "PASS"
