#!/usr/bin/env bash
# disk_full.sh TOY COMPARE MPIEXEC: a 2-rank run whose output folder is a
# small tmpfs fills it while writing its third checkpoint. The run must stop
# with an error naming the file and the cause, leave the checkpoints written
# before whole, and a resume from them (with room again) must end bitwise
# where a run that never ran out ends. Needs to mount a tmpfs in a private
# mount namespace (root); exits 77 (skipped) otherwise.
set -euo pipefail
toy=$(realpath "$1") compare=$(realpath "$2") mpiexec=$3
if ! unshare --mount true 2>/dev/null; then
  echo "SKIP: cannot make a mount namespace for a small tmpfs (needs root)"; exit 77
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
fail() { echo "FAIL: $*"; tail -20 "$work/full.log" 2>/dev/null; exit 1; }
# About 2.1 MB a checkpoint (model and AdamW state of 16384 hidden units):
# the third does not fit in 5 MB.
common=(--set obs.gpu_every_s=0 --set train.max_steps=12 --set train.global_batch=8 --set train.ckpt_every=3
        --set toy.hidden=16384 --set train.keep_last=0)
"$mpiexec" -n 2 "$toy" "${common[@]}" --set train.out_dir="$work/straight" >straight.log 2>&1 ||
  { tail -20 straight.log; exit 1; }

mkdir full
unshare --mount bash -c '
  set -u
  mount -t tmpfs -o size=5m tmpfs full || exit 99
  "$@" --set train.out_dir=full/run >full.log 2>&1
  echo $? >status
  cp -a full/run kept
' _ "$mpiexec" -n 2 "$toy" "${common[@]}"
status=$(cat status)
[ "$status" != 99 ] || { echo "SKIP: mounting a tmpfs failed"; exit 77; }
[ "$status" != 0 ] || fail "the run fit in 5 MB: the test no longer fills the disk"
grep -q "full/run/checkpoints/.*No space left on device" full.log ||
  fail "exit $status without naming the checkpoint and the full disk"
[ -f kept/checkpoints/step-00000003.h5 ] && [ -f kept/checkpoints/step-00000006.h5 ] ||
  fail "checkpoints written before the disk filled are gone: $(ls kept/checkpoints)"
! compgen -G "kept/checkpoints/step-00000009.h5" >/dev/null || fail "a checkpoint that did not fit looks complete"

"$mpiexec" -n 2 "$toy" "${common[@]}" --set train.out_dir="$work/kept" >resume.log 2>&1 ||
  { tail -20 resume.log; fail "resuming from the kept checkpoints failed"; }
grep -q "resumed from .*step-00000006.h5 at step 6" resume.log || fail "did not resume from step 6"
"$compare" models straight/models/final_model.h5 kept/models/final_model.h5 0
echo "PASS: disk full at step 9: exit $status, $(grep -o 'No space left on device' full.log | head -1), step 6 kept and resumed bitwise"
