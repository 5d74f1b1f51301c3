#!/usr/bin/env bash
# inputs_change.sh CAROTID SUMMARIZE COMPARE MPIEXEC: inputs changed under a
# running 2-rank job, once its first rows are in metrics.jsonl.
#   images cached   carotid's default: every image decoded once at the start,
#                   so deleting images mid-run changes nothing (bitwise);
#   images decoded  data.cache = false: an image deleted mid-run stops the run
#                   with an error naming it, not a signal; its checkpoints stay
#                   whole, and with the image back the run resumes to the end;
#   CSV rewritten   summarize reads its CSVs once: rewriting the training CSV
#                   mid-run changes nothing (bitwise).
set -euo pipefail
carotid=$(realpath "$1") summarize=$(realpath "$2") compare=$(realpath "$3") mpiexec=$4
source "$(dirname "${BASH_SOURCE[0]}")/case_lib.sh"

# while_running NAME METRICS ACTION CMD...: runs CMD (output to NAME.log) and,
# once METRICS has 3 rows, ACTION; the status goes to NAME.status. A run that
# outlives 300 s has hung.
while_running() {
  local name=$1 metrics=$2 action=$3 pid waited=0
  shift 3
  case_name=$name
  timeout 300 "$@" >"$name.log" 2>&1 &
  pid=$!
  until [ "$(cat "$metrics" 2>/dev/null | wc -l)" -ge 3 ]; do
    kill -0 $pid 2>/dev/null || fail "ended before its third step"
    sleep 0.2
  done
  eval "$action"
  kill -0 $pid 2>/dev/null || fail "ended before its input changed: the check would prove nothing"
  wait $pid && echo 0 >"$name.status" || echo $? >"$name.status"
  [ "$(cat "$name.status")" != 124 ] || fail "still running 300 s after its input changed: hung"
}

# 40 persons, two 16x16 gray images each: small enough for many quick epochs.
python3 - <<'PY'
import os, struct, zlib, random
random.seed(7)
def png(path, pixels):
    raw = b"".join(b"\0" + bytes(row) for row in pixels)
    chunk = lambda tag, data: struct.pack(">I", len(data)) + tag + data + struct.pack(">I", zlib.crc32(tag + data))
    with open(path, "wb") as f:
        f.write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", 16, 16, 8, 0, 0, 0, 0))
                + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))
with open("labels.csv", "w") as labels:
    labels.write("id,label\n")
    for p in range(1, 41):
        os.makedirs(f"images/{p}")
        for k in "ab":
            png(f"images/{p}/{k}.png", [[random.randrange(256) for _ in range(16)] for _ in range(16)])
        labels.write(f"{p},{p % 2}\n")
PY
cp -a images images.all
carotid_args() {  # carotid_args RUN_DIR: a 2-rank run of 8 epochs, a checkpoint a step
  echo --root-dir images --label-excel labels.csv --image-size 16 --epochs 8 --set cmd.run_dir="$1" \
    --set obs.gpu_every_s=0 --set data.cache_dir="$work/cache" --set train.ckpt_every=1 --set train.keep_last=2
}

# images cached: deleting has no effect.
"$mpiexec" -n 2 "$carotid" $(carotid_args straight) >straight.log 2>&1 || { tail -20 straight.log; exit 1; }
while_running cached cached/metrics.jsonl 'rm images/7/a.png images/8/b.png' \
  "$mpiexec" -n 2 "$carotid" $(carotid_args cached)
[ "$(cat cached.status)" = 0 ] || fail "exit $(cat cached.status)"
"$compare" models straight/models/final_model.h5 cached/models/final_model.h5 0
echo "PASS images cached: 2 images deleted mid-run, the run ends bitwise as without"
rm -rf images && cp -a images.all images

# images decoded for every batch: a named stop, then a resume.
while_running decoded decoded/metrics.jsonl 'rm images/7/a.png images/8/b.png' \
  "$mpiexec" -n 2 "$carotid" $(carotid_args decoded) --set data.cache=false
status=$(cat decoded.status)
[ "$status" != 0 ] || fail "the run ended well without images it still had to read"
[ "$status" -lt 128 ] || fail "ended by a signal (status $status)"
grep -qE "images/(7/a|8/b).png: cannot open: No such file or directory \(it was read when the run started: changed or removed since\?\)" decoded.log ||
  fail "exit $status without naming the deleted image"
for ckpt in decoded/checkpoints/step-*.h5; do
  "$compare" models "$ckpt" "$ckpt" 0 >/dev/null || fail "$ckpt, written before the image went, does not read back"
done
rm -rf images && cp -a images.all images
"$mpiexec" -n 2 "$carotid" $(carotid_args decoded) --set data.cache=false >decoded.resume.log 2>&1 ||
  { tail -20 decoded.resume.log; fail "the resume with the images back failed"; }
grep -q "resumed from " decoded.resume.log || fail "the rerun did not resume"
echo "PASS images decoded: exit $status naming the deleted image; resumed from $(grep -o 'step-[0-9]*.h5' decoded.resume.log | head -1) with the images back"

# CSV rewritten: summarize read it at the start.
python3 - <<'PY'
import random
random.seed(3)
words = "the a cat dog sat ran on under mat tree went home park ball red blue".split()
with open("train.csv", "w") as f:
    f.write("id,dialogue,summary\n")
    for i in range(64):
        said = " ".join(random.choice(words) for _ in range(20))
        f.write(f'{i},"#Person1#: {said}","{" ".join(said.split()[:5])}"\n')
PY
cp train.csv train.orig.csv
sum_args() {  # sum_args OUT_DIR: 30 steps of 16 rows, not the competition's 512 (27 s a run, against 6)
  echo --set data.train_csv="$work/train.csv" --set data.cache_dir="$work/cache-$1" --set model.preset=tiny \
    --set model.n_layer=1 --set train.max_steps=30 --set train.micro_batch=8 --set train.grad_accum=1 \
    --set train.warmup_steps=0 --set eval.rouge_samples=0 --set train.out_dir="$work/$1" --set obs.gpu_every_s=0
}
"$mpiexec" -n 2 "$summarize" train $(sum_args sum-straight) >sum-straight.log 2>&1 || { tail -20 sum-straight.log; exit 1; }
while_running sum-rewritten sum-rewritten/metrics.jsonl 'head -5 train.orig.csv | sed "s/cat/bird/g" >train.csv' \
  "$mpiexec" -n 2 "$summarize" train $(sum_args sum-rewritten)
[ "$(cat sum-rewritten.status)" = 0 ] || fail "exit $(cat sum-rewritten.status)"
"$compare" models sum-straight/models/final_model.h5 sum-rewritten/models/final_model.h5 0
echo "PASS CSV rewritten: the training CSV cut to 4 rows mid-run, the run ends bitwise as without"
