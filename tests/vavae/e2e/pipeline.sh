#!/usr/bin/env bash
# pipeline.sh VAVAE FIXTURE MPIEXEC JOB FASHION_MNIST WORK PYTHON TB_CHECK [learns]:
# the tiny pipeline on Fashion-MNIST (10 classes as 10 users, 60 training and
# 10 validation images each, 32x32) under two ranks: every stage's outputs
# exist, the sample grid is also a TensorBoard image (read back with
# TensorBoard by TB_CHECK where PYTHON has it), a second `complete` skips
# every stage, `complete --force` trains them again and keeps the runs it
# replaces, and sample refuses a user the latents lack and a VAE they did not
# come from. Exits 77 (skipped) without the dataset.
#
# Whether the pipeline learns: ctest's form trains each model a fraction of
# the job's budget (under a minute in all on 2 cores) and asks that the VAE's
# and the DiT's training losses fall well below where they began and that the
# judge tells real validation images apart; with `learns` (learns.sh, about
# 6 minutes) the whole budget runs, and evaluate's conditional accuracy of
# the samples must be at least twice chance.
set -uo pipefail
vavae=$1 fixture=$2 mpiexec=$3 job=$4 src=$5 work=$6 python=$7 tb_check=$8 form=${9:-ci}
budget=()
# ctest's form also picks the DiT by sampling: each evaluation judges 2
# images a user (dit.best_metric), with the judge trained before the DiT.
[ "$form" = learns ] || budget=(--set vae.epochs=3 --set dit.max_steps=120 --set dit.warmup_steps=12
  --set eval.epochs=4 --set sample.num_samples_per_user=4 --set dit.best_metric=eval_conditional_accuracy
  --set eval.samples_per_user=2)
rm -rf "$work"
"$fixture" "$src" "$work/data_split" 10 60 10 32
status=$?
[ "$status" = 0 ] || exit "$status"
out="$work/out"
fail() { echo "FAIL: $*"; exit 1; }
log=$("$mpiexec" -n 2 "$vavae" complete --config "$job" --data-root "$work/data_split" --run-dir "$out" \
  "${budget[@]}" 2>&1)
status=$?
printf '%s\n' "$log"
[ "$status" = 0 ] || fail "complete exited with $status"
for f in vae/models/final_model.h5 vae/vae.safetensors latent_features/train.h5 latent_features/val.h5 \
         dit/models/final_model.h5 samples/grid.png evaluate/evaluate.json; do
  [ -s "$out/$f" ] || fail "$out/$f is missing"
done
[ ! -e "$out/latent_features/parts" ] || fail "extract left its part files"
"$python" "$tb_check" images "$out/samples/tb" samples/grid="$out/samples/grid.png"
status=$?
[ "$status" = 0 ] || [ "$status" = 77 ] || fail "TensorBoard does not read the grid in $out/samples/tb"
for u in 01 02 03 04 05 06 07 08 09 10; do
  for i in 000 001 002 003; do [ -s "$out/samples/user${u}_$i.png" ] || fail "no samples/user${u}_$i.png"; done
done
accuracy=$(sed -n 's/^conditional accuracy: \([0-9.]*\).*/\1/p' <<<"$log")
[ -n "$accuracy" ] || fail "evaluate printed no conditional accuracy"
real=$(sed -n 's/^real validation accuracy: \([0-9.]*\).*/\1/p' <<<"$log")
if [ "$form" = learns ]; then
  # Measured 0.29-0.41 over 80 images (chance 0.1); twice chance leaves room
  # for the spread between runs and machines.
  awk -v a="$accuracy" 'BEGIN { exit !(a > 0.2) }' || fail "conditional accuracy $accuracy is not well above chance (0.1)"
else
  # The mean training loss of the last 10 logged steps against the first
  # 10's; a model that learns nothing stays near 1. Measured: the VAE 0.52
  # of its start after 54 steps, the DiT 0.73 after 120 (its floor is high on
  # the latents of a VAE trained 3 epochs; 0.67 after 200, which cost 20
  # CPU-s more); the judge 0.79 on real images after 4 epochs (chance 0.1).
  fallen() {
    awk -v most="$2" -v what="$1" 'match($0, /"loss": *[0-9.e+-]+/) {
        v = substr($0, RSTART, RLENGTH); sub(/"loss": */, "", v); loss[n++] = v }
      END { if (n < 20) { print what ": " n " training rows"; exit 1 }
            for (i = 0; i < 10; i++) { a += loss[i]; b += loss[n - 1 - i] }
            printf "%s: loss %.4g -> %.4g (%.2f of its start)\n", what, a / 10, b / 10, b / a
            exit !(b / a < most) }' "$3"
  }
  grep -q '"eval_conditional_accuracy"' "$out/dit/metrics.jsonl" || fail "the DiT's evaluations did not sample and judge"
  grep -q "new best eval_conditional_accuracy" <<<"$log" || fail "the DiT's best model was not picked by the judge"
  grep -q "first evaluate's judge learns the real images" <<<"$log" || fail "the judge did not train before the DiT"
  grep -q "nothing to do: the checkpoint is at step" <<<"$log" || fail "evaluate trained the judge again"
  fallen VAE 0.6 "$out/vae/metrics.jsonl" || fail "the VAE's training loss did not fall below 0.6 of its start"
  fallen DiT 0.8 "$out/dit/metrics.jsonl" || fail "the DiT's training loss did not fall below 0.8 of its start"
  awk -v a="$real" 'BEGIN { exit !(a > 0.4) }' || fail "the judge's real validation accuracy $real is not above 0.4"
fi
again=$("$mpiexec" -n 2 "$vavae" complete --config "$job" --data-root "$work/data_split" --run-dir "$out" \
  "${budget[@]}" 2>&1)
status=$?
[ "$status" = 0 ] || { printf '%s\n' "$again"; fail "the second complete exited with $status"; }
[ "$(grep -c 'outputs exist, skipped' <<<"$again")" = 5 ] || { printf '%s\n' "$again"; fail "a finished stage ran again"; }
# --force reruns every stage; a finished training run is kept aside, not
# resumed at its last step (which would train nothing). One step each.
forced=$("$mpiexec" -n 2 "$vavae" complete --config "$job" --data-root "$work/data_split" --run-dir "$out" --force \
  --set vae.max_steps=1 --set dit.max_steps=1 --set dit.warmup_steps=0 --set eval.max_steps=1 \
  --set sample.num_samples_per_user=1 2>&1)
status=$?
[ "$status" = 0 ] || { printf '%s\n' "$forced"; fail "complete --force exited with $status"; }
! grep -q 'skipped\|nothing to do' <<<"$forced" || { printf '%s\n' "$forced"; fail "complete --force skipped a stage"; }
[ "$(grep -c 'training on 2 rank' <<<"$forced")" = 3 ] || { printf '%s\n' "$forced"; fail "complete --force did not train three models"; }
for d in vae dit evaluate; do
  ls -d "$out/$d.replaced-"* >/dev/null 2>&1 || fail "the finished $d run was not kept aside"
  [ -s "$out/$d.replaced-"*/models/final_model.h5 ] || [ "$d" = evaluate ] || fail "the kept $d run lost its model"
done
# Bad input that needs a finished pipeline: a user the latents lack, and a
# VAE other than the one the latents came from (one step of another run).
expect_usage() {
  local want=$1; shift
  local text
  text=$("$vavae" "$@" 2>&1)
  local code=$?
  [ "$code" = 2 ] && grep -Eq -- "$want" <<<"$text" || { printf '%s\n' "$text"; fail "wanted exit 2 and /$want/, got $code"; }
}
common=(--config "$job" --data-root "$work/data_split" --run-dir "$out")
expect_usage "user 11 is out of range" sample "${common[@]}" --user-ids 3 11 --output-dir "$work/bad-samples"
"$vavae" train-vae --config "$job" --data-root "$work/data_split" --run-dir "$work/other" --set vae.max_steps=1 \
  >/dev/null 2>&1 || fail "one step of train-vae failed"
expect_usage "is not the one the latents" sample "${common[@]}" --vae-checkpoint "$work/other/vae/models/final_model.h5" \
  --output-dir "$work/bad-samples"
[ ! -e "$work/bad-samples" ] || fail "a refused sample wrote $work/bad-samples"
# Passed: the runs are hundreds of MB that a CI disk need not keep.
rm -rf "$work"
echo "PASS ($form): conditional accuracy $accuracy, real validation accuracy $real"
