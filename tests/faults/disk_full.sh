#!/usr/bin/env bash
# disk_full.sh TOY COMPARE MPIEXEC SUMMARIZE DIALOGUES: runs whose output
# folder is a small tmpfs that fills while they write each kind of file:
#   checkpoint  a 2-rank run fills 5 MB while writing its third checkpoint;
#   model       the last checkpoint fits, the final model after it does not;
#   metrics     metrics.jsonl (and the logs) fill a few free pages;
#   submission  summarize predict over a complete submission.csv, no room left.
# Every case must stop with an error naming the file and the cause, leave
# every file that was complete before it whole, and a rerun with room must end
# where a run that never ran out ends (bitwise, for the trained models).
# Needs to mount a tmpfs in a private mount namespace (root); exits 77
# (skipped) otherwise.
set -euo pipefail
toy=$(realpath "$1") compare=$(realpath "$2") mpiexec=$3 summarize=$(realpath "$4") dialogues=$(realpath "$5")
if ! unshare --mount true 2>/dev/null; then
  echo "SKIP: cannot make a mount namespace for a small tmpfs (needs root)"; exit 77
fi
source "$(dirname "${BASH_SOURCE[0]}")/case_lib.sh"

# on_small_disk NAME SIZE ROOM CMD...: runs CMD in a private mount namespace
# where NAME/ is a tmpfs of SIZE holding a copy of NAME.before/ (if any) and
# a filler that leaves ROOM bytes free (all: no filler). CMD's output goes to
# NAME.log, its status to NAME.status, and what it left in NAME/ to NAME.kept/.
on_small_disk() {
  local name=$1 size=$2 room=$3
  shift 3
  case_name=$name
  mkdir -p "$name"
  unshare --mount bash -c '
    set -u
    name=$1 size=$2 room=$3
    shift 3
    mount -t tmpfs -o size=$size tmpfs "$name" || exit 99
    if [ -d "$name.before" ]; then cp -a "$name.before/." "$name/" || exit 99; fi
    if [ "$room" != all ]; then
      fallocate -l $(( $(df -B1 --output=avail "$name" | tail -1) - room )) "$name/.filler" || exit 99
    fi
    "$@" >"$name.log" 2>&1
    echo $? >"$name.status"
    rm -f "$name/.filler"
    cp -a "$name" "$name.kept"
  ' _ "$name" "$size" "$room" "$@" || { echo "SKIP: mounting or filling a tmpfs failed"; exit 77; }
  status=$(cat "$name.status")
  [ "$status" != 0 ] || fail "the run fit: the case no longer fills the disk"
}

# The toy task: about 2.1 MB a checkpoint (model and AdamW state of 16384
# hidden units), 0.7 MB a model.
big=(--set obs.gpu_every_s=0 --set train.max_steps=12 --set train.global_batch=8 --set toy.hidden=16384
     --set train.keep_last=0)
"$mpiexec" -n 2 "$toy" "${big[@]}" --set train.ckpt_every=3 --set train.out_dir="$work/straight" >straight.log 2>&1 ||
  { tail -20 straight.log; exit 1; }
straight=straight/models/final_model.h5

# checkpoint: the third does not fit in 5 MB.
on_small_disk ckpt 5m all "$mpiexec" -n 2 "$toy" "${big[@]}" --set train.ckpt_every=3 --set train.out_dir=ckpt/run
grep -q "ckpt/run/checkpoints/.*No space left on device" ckpt.log ||
  fail "exit $status without naming the checkpoint and the full disk"
[ -f ckpt.kept/run/checkpoints/step-00000003.h5 ] && [ -f ckpt.kept/run/checkpoints/step-00000006.h5 ] ||
  fail "checkpoints written before the disk filled are gone: $(ls ckpt.kept/run/checkpoints)"
! compgen -G "ckpt.kept/run/checkpoints/step-00000009.h5" >/dev/null || fail "a checkpoint that did not fit looks complete"
! compgen -G "ckpt.kept/run/checkpoints/.*tmp*" >/dev/null || fail "the cut checkpoint's temporary file is left"
"$mpiexec" -n 2 "$toy" "${big[@]}" --set train.ckpt_every=3 --set train.out_dir="$work/ckpt.kept/run" >ckpt.resume.log 2>&1 ||
  { tail -20 ckpt.resume.log; fail "resuming from the kept checkpoints failed"; }
grep -q "resumed from .*step-00000006.h5 at step 6" ckpt.resume.log || fail "did not resume from step 6"
"$compare" models "$straight" ckpt.kept/run/models/final_model.h5 0
said() { grep -m1 '^error:' "$1.log" | cut -c1-160; }
echo "PASS checkpoint: exit $status, step 6 kept and resumed bitwise; $(said ckpt)"

# model: room for what the straight run wrote up to its last checkpoint and
# half the final model.
size_of() { stat -c %s "$1"; }
room=$(( $(size_of straight/checkpoints/step-00000012.h5) + $(size_of $straight) / 2 + 65536 ))
[ -f straight/models/best_model.h5 ] && room=$(( room + $(size_of straight/models/best_model.h5) ))
on_small_disk model 16m $room "$mpiexec" -n 2 "$toy" "${big[@]}" --set train.ckpt_every=12 --set train.out_dir=model/run
grep -q "model/run/models/.final_model.h5.*No space left on device" model.log ||
  fail "exit $status without naming the final model and the full disk"
[ -f model.kept/run/checkpoints/step-00000012.h5 ] || fail "the last checkpoint, written before, is gone"
[ ! -e model.kept/run/models/final_model.h5 ] || fail "a final model that did not fit looks complete"
! compgen -G "model.kept/run/models/.*tmp*" >/dev/null || fail "the cut model's temporary file is left"
"$mpiexec" -n 2 "$toy" "${big[@]}" --set train.ckpt_every=12 --set train.out_dir="$work/model.kept/run" \
  >model.resume.log 2>&1 || { tail -20 model.resume.log; fail "the rerun with room failed"; }
grep -q "writing the final model it lacks" model.resume.log || fail "the rerun did not write the missing final model"
"$compare" models "$straight" model.kept/run/models/final_model.h5 0
echo "PASS model: exit $status, the rerun wrote the final model from step 12's checkpoint, bitwise; $(said model)"

# metrics: a small model, a row a step, 5 pages free for config, logs and
# rows (no evaluation, so no best model, before the end; TensorBoard's copy of
# the rows off: either would fill the room first).
small=(--set obs.gpu_every_s=0 --set train.max_steps=200 --set train.global_batch=8 --set train.log_every=1
       --set train.ckpt_every=0 --set train.eval_every=200 --set obs.tensorboard=false)
"$mpiexec" -n 2 "$toy" "${small[@]}" --set train.out_dir="$work/small" >small.log 2>&1 || { tail -20 small.log; exit 1; }
on_small_disk metrics 1m 20480 "$mpiexec" -n 2 "$toy" "${small[@]}" --set train.out_dir=metrics/run
grep -q "metrics/run/metrics.jsonl: cannot write: No space left on device" metrics.log ||
  fail "exit $status without naming metrics.jsonl and the full disk"
"$mpiexec" -n 2 "$toy" "${small[@]}" --set train.out_dir="$work/metrics.kept/run" >metrics.resume.log 2>&1 ||
  { tail -20 metrics.resume.log; fail "the rerun with room failed"; }
python3 - metrics.kept/run/metrics.jsonl <<'PY' || fail "metrics.jsonl is not one JSON object per line after the rerun"
import json, sys
rows = [json.loads(line) for line in open(sys.argv[1])]
assert rows[-1]["step"] == 200, rows[-1]
PY
"$compare" models small/models/final_model.h5 metrics.kept/run/models/final_model.h5 0
echo "PASS metrics: exit $status, $(grep -c . metrics.kept/run/metrics.jsonl) whole rows after the rerun; $(said metrics)"
grep -h "logs to the console only" metrics.log | cut -c1-160 || true

# submission: a complete submission.csv, then a predict with no room left.
common=(--set data.cache_dir="$work/cache" --set model.preset=tiny --set model.n_layer=1
        --set data.train_csv="$dialogues" --set data.val_fraction=0.25)
"$summarize" train "${common[@]}" --set train.out_dir="$work/sum" --set train.max_steps=2 --set train.warmup_steps=0 \
  >sum.train.log 2>&1 || { tail -20 sum.train.log; exit 1; }
common+=(--set cmd.checkpoint="$work/sum/models/final_model.h5" --set data.test_csv="$dialogues")
"$summarize" predict "${common[@]}" --set train.out_dir="$work/submission.before" >sum.predict.log 2>&1 ||
  { tail -20 sum.predict.log; exit 1; }
on_small_disk submission 1m 0 "$summarize" predict "${common[@]}" --set train.out_dir=submission
grep -q "submission/.submission.csv.*No space left on device" submission.log ||
  fail "exit $status without naming submission.csv and the full disk"
cmp submission.before/submission.csv submission.kept/submission.csv || fail "the complete submission.csv was changed"
echo "PASS submission: exit $status, the submission written before is unchanged; $(said submission)"
