#!/usr/bin/env bash
# bad_input.sh VAVAE CASE WORK: a wrong input stops apps/vavae before any
# work with exit status 2 and a message naming the folder, file or key.
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../../e2e/expect_lib.sh"
vavae=$1 case=$2 work=$3
rm -rf "$work"
# A 1x1 gray PNG.
png=iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAAAAAA6fptVAAAACklEQVR4nGNgAAAAAgABSK+kcQAAAABJRU5ErkJggg==
for split in train val; do
  for u in 1 2; do
    mkdir -p "$work/data/$split/user$u"
    echo "$png" | base64 -d >"$work/data/$split/user$u/a.png"
  done
done
args=(--run-dir "$work/out" --data-root "$work/data" --image-size 32 --set vae.preset=tiny --set dit.preset=tiny)
case $case in
  missing-root)
    set -- train-vae "${args[@]}" --data-root "$work/nowhere"
    want="data.root.*$work/nowhere/train" ;;
  wrong-layout)
    mkdir -p "$work/data/train/alice"
    set -- train-vae "${args[@]}"
    want="data.root.*$work/data/train/alice.*user<N>" ;;
  empty-user)
    mkdir -p "$work/data/val/user3"
    set -- train-vae "${args[@]}"
    want="$work/data/val/user3 holds no .png" ;;
  warmup-past-steps)
    # The stage's key, not the train.* key it fills, is the one to name.
    set -- train-vae "${args[@]}" --set vae.micro_batch=1 --set vae.max_steps=2 --set vae.warmup_steps=5
    want="vae.warmup_steps \(5\) must be less than the run's total steps \(2\)" ;;
  sample-without-latents)
    set -- sample "${args[@]}" --user-ids 1 2
    want="latent_features/train.h5 not found.*extract" ;;
  vf-weight)
    set -- train-vae "${args[@]}" --set vae.vf_weight=-1
    want="vae.vf_weight must be >= 0" ;;
  best-metric-without-inception)
    set -- train-dit "${args[@]}" --set dit.best_metric=eval_kid_mean
    want='dit.best_metric = "eval_kid_mean" compares Inception features: set eval.inception_weights' ;;
  *) echo "unknown case $case"; exit 1 ;;
esac
name=vavae_bad_input_$case
expect_run "$name" 2 "$want" -- "$vavae" "$@" || exit 1
expect_nothing_written "$name" "$work/out" || exit 1
echo PASS
