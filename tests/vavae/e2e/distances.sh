#!/usr/bin/env bash
# distances.sh VAVAE FIXTURE VAVAE_TESTS MPIEXEC JOB FASHION_MNIST TB_PYTHON TB_CHECK WORK:
# evaluate's FID, KID, precision and recall under two ranks, with seeded
# random Inception weights (the real ones are not on our machines; the
# network is checked against pytorch-fid's by peer_fid_inception) and 2 users'
# real validation images standing in for generated ones:
# - evaluate.json has each figure overall and per user, with its counts, and
#   FID null with the reason (too few images for 2048 features);
# - TensorBoard has them; the real images' features are cached in the run
#   folder and reused, and computed again when a real image changes;
# - without eval.inception_weights the judge's figures stay, the others are
#   null, and one line says what to supply;
# - train-dit picks its model by KID of images it samples at each evaluation;
# - a bad weights file stops the run at the door (exit 2, naming the key and
#   the tensor) before the judge trains.
# Exits 77 (skipped) without Fashion-MNIST.
set -uo pipefail
vavae=$1 fixture=$2 vavae_tests=$3 mpiexec=$4 job=$5 src=$6 python=$7 tb_check=$8 work=$9
rm -rf "$work"
"$fixture" "$src" "$work/data_split" 2 10 4 32
status=$?
[ "$status" = 0 ] || exit "$status"
fail() { echo "FAIL: $*"; exit 1; }
TANDEM_RANDOM_INCEPTION_OUT="$work/inception.safetensors" "$vavae_tests" \
  --gtest_filter=FidInceptionFixture.WritesRandomWeights >/dev/null || fail "could not write random Inception weights"
mkdir -p "$work/generated"
i=0
for f in "$work"/data_split/val/user*/*; do
  u=$(basename "$(dirname "$f")"); u=${u#user}
  cp "$f" "$work/generated/$(printf 'user%02d_%03d.png' "$u" "$i")"
  i=$((i + 1))
done
evaluate() {
  "$mpiexec" -n 2 "$vavae" evaluate --config "$job" --data-root "$work/data_split" --set eval.max_steps=2 --set eval.micro_batch=4 \
    --set eval.samples_dir="$work/generated" "$@" 2>&1
}
log=$(evaluate --run-dir "$work/out" --set eval.inception_weights="$work/inception.safetensors")
status=$?
printf '%s\n' "$log"
[ "$status" = 0 ] || fail "evaluate with Inception weights exited with $status"
report="$work/out/evaluate/evaluate.json"
"$python" - "$report" <<'PY' || fail "evaluate.json lacks a figure"
import json, math, sys
r = json.load(open(sys.argv[1]))
assert r["real_train_images"] == 20 and r["generated_images"] == 8, (r["real_train_images"], r["generated_images"])
assert r["fid"] is None and "FID needs more than the 2048 features" in r["skipped"][0], r.get("skipped")
for key in ("kid_mean", "kid_std", "precision", "recall"):
    assert isinstance(r[key], float) and math.isfinite(r[key]), (key, r[key])
assert r["kid_subset_size"] == 8
assert [u["user"] for u in r["per_user"]] == [1, 2]
for u in r["per_user"]:
    assert u["real_train_images"] == 10 and u["generated"] == 4 and u["kid_subset_size"] == 4, u
    assert u["fid"] is None and math.isfinite(u["kid_mean"]) and 0 <= u["precision"] <= 1, u
PY
grep -q "^FID -, KID .* (20 real training and 8 generated images)" <<<"$log" || fail "evaluate printed no figures"
"$python" "$tb_check" tags "$work/out/evaluate/tb" evaluate/kid_mean evaluate/precision evaluate/user01/kid_mean \
  evaluate/conditional_accuracy
status=$?
[ "$status" = 0 ] || [ "$status" = 77 ] || fail "TensorBoard does not read the figures in $work/out/evaluate/tb"
[ -s "$work/out/evaluate/real_features.safetensors" ] || fail "the real images' features were not cached"

log=$(evaluate --run-dir "$work/out" --set eval.inception_weights="$work/inception.safetensors")
[ $? = 0 ] && grep -q "the real images' features from" <<<"$log" || { printf '%s\n' "$log"; fail "the cache was not reused"; }
first=$(ls "$work"/data_split/train/user1/* | head -1) second=$(ls "$work"/data_split/train/user1/* | sed -n 2p)
cp "$second" "$first"
log=$(evaluate --run-dir "$work/out" --set eval.inception_weights="$work/inception.safetensors")
[ $? = 0 ] && grep -q "holds the features of other images, weights or image size: computing them again" <<<"$log" ||
  { printf '%s\n' "$log"; fail "a changed real image did not invalidate the cache"; }

log=$(evaluate --run-dir "$work/plain")
[ $? = 0 ] || { printf '%s\n' "$log"; fail "evaluate without Inception weights failed"; }
grep -q "no FID, KID, precision or recall: eval.inception_weights names no file" <<<"$log" || fail "no line said what to supply"
"$python" -c "import json,sys; r = json.load(open(sys.argv[1])); assert r['kid_mean'] is None and r['conditional_accuracy'] >= 0" \
  "$work/plain/evaluate/evaluate.json" || fail "evaluate.json without weights"

# train-dit picked by KID: each evaluation samples 2 images a user and
# compares their features with the real ones (cached by evaluate above).
dit=(--config "$job" --data-root "$work/data_split" --run-dir "$work/out" --set vae.max_steps=2
  --set vae.micro_batch=4 --set dit.max_steps=4 --set dit.warmup_steps=0 --set dit.micro_batch=4
  --set train.eval_every=2 --set dit.best_metric=eval_kid_mean --set eval.samples_per_user=2
  --set eval.max_steps=2 --set eval.micro_batch=4 --set eval.inception_weights="$work/inception.safetensors")
for stage in train-vae extract train-dit; do
  log=$("$mpiexec" -n 2 "$vavae" "$stage" "${dit[@]}" 2>&1)
  status=$?
  [ "$status" = 0 ] || { printf '%s\n' "$log"; fail "$stage exited with $status"; }
done
grep -q "new best eval_kid_mean" <<<"$log" || { printf '%s\n' "$log"; fail "train-dit did not pick its model by KID"; }
"$python" - "$work/out/dit/metrics.jsonl" <<'PY' || fail "train-dit's evaluations lack a figure"
import json, math, sys
rows = [json.loads(line) for line in open(sys.argv[1]) if "eval_kid_mean" in line]
assert len(rows) == 2, rows
for r in rows:
    for key in ("eval_loss", "eval_conditional_accuracy", "eval_kid_mean", "eval_precision", "eval_recall"):
        assert math.isfinite(r[key]), (key, r)
    assert "eval_fid" not in r, r
PY

# A figure the counts cannot give stops train-dit at the door: 2 images
# (1 a user) for precision, which needs 4.
log=$("$mpiexec" -n 2 "$vavae" train-dit "${dit[@]}" --set dit.best_metric=eval_precision --set eval.samples_per_user=1 \
  2>&1)
status=$?
[ "$status" = 2 ] && grep -q 'dit.best_metric = "eval_precision": 2 generated images' <<<"$log" ||
  { printf '%s\n' "$log"; fail "eval_precision on 2 images: wanted exit 2, got $status"; }

head -c 1000 "$work/inception.safetensors" > "$work/truncated.safetensors"
log=$(evaluate --run-dir "$work/bad" --set eval.inception_weights="$work/truncated.safetensors")
status=$?
[ "$status" = 2 ] && grep -q "eval.inception_weights: .*truncated.safetensors" <<<"$log" ||
  { printf '%s\n' "$log"; fail "a truncated weights file: wanted exit 2 naming the key and file, got $status"; }
[ ! -e "$work/bad/evaluate/classifier" ] || fail "the judge trained before the weights were checked"
rm -rf "$work"
echo "PASS: FID, KID, precision and recall in evaluate.json and TensorBoard, the real features cached"
