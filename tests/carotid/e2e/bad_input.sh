#!/usr/bin/env bash
# bad_input.sh CAROTID CASE WORK: a wrong input stops apps/carotid before
# any work with exit status 2 and a message naming the file or key.
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../../e2e/expect_lib.sh"
carotid=$1 case=$2 work=$3
rm -rf "$work"
mkdir -p "$work/images/1" "$work/images/2" "$work/images/3" "$work/images/4"
# A 1x1 gray PNG, and a file that only claims to be one.
png=iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAAAAAA6fptVAAAACklEQVR4nGNgAAAAAgABSK+kcQAAAABJRU5ErkJggg==
for p in 1 2 3 4; do echo "$png" | base64 -d >"$work/images/$p/a.png"; done
printf 'not a png' >"$work/images/2/broken.png"
printf 'id,label\n1,0\n2,1\n3,0\n4,1\n' >"$work/labels.csv"
args=(--root-dir "$work/images" --label-excel "$work/labels.csv" --output-dir "$work/out"
      --image-size 16 --epochs 1 --set data.cache=false)
case $case in
  missing-root)
    set -- --root-dir "$work/nowhere" --label-excel "$work/labels.csv" --output-dir "$work/out"
    want="$work/nowhere.*data.root" ;;
  missing-column)
    set -- "${args[@]}" --set data.label_column=diagnosis
    want="labels.csv.*diagnosis" ;;
  ratios)
    set -- "${args[@]}" --train-ratio 0.5 --val-ratio 0.3 --test-ratio 0.3
    want="must sum to 1" ;;
  corrupt-strict)
    set -- "${args[@]}" --set data.strict=true --train-ratio 0.5 --val-ratio 0.5 --test-ratio 0
    want="1 of 5 images cannot be read \\(data.strict = true\\).*broken.png" ;;
  label-smoothing)
    set -- "${args[@]}" --set train.label_smoothing=1.5
    want="train.label_smoothing must be in \\[0, 1\\)" ;;
  mixup)
    set -- "${args[@]}" --set aug.mixup=-0.5
    want="aug.mixup must be in \\[0, 10\\], got -0.5 \\(--set\\)" ;;
  threshold)
    set -- "${args[@]}" --set model.threshold=sensitivity=2
    want="model.threshold = 'sensitivity=2': expected youden, sensitivity=S" ;;
  temperature)
    set -- "${args[@]}" --set calibrate.temperature=hot
    want='calibrate.temperature must be "fit", "none" or a number above 0, got "hot"' ;;
  best-metric)
    set -- "${args[@]}" --set train.best_metric=eval_person_aux
    want='train.best_metric = "eval_person_aux" is not a metric this evaluation gives \(eval_loss, eval_image_accuracy, eval_image_auc, .*eval_person_auc, .*\), nor "none"' ;;
  ema-bn-without-ema)
    set -- "${args[@]}" --set train.ema_bn_batches=4
    want="train.ema_bn_batches = 4 gives the weights' average batch-norm statistics of its own, but there is no average: set train.ema_decay > 0" ;;
  data-seed)
    set -- "${args[@]}" --set data.seed=-2
    want="data.seed must be >= -1, got -2 \\(--set\\)" ;;
  models-per-fold)
    set -- cv --folds 2 "${args[@]}" --models-per-fold 0
    want="cv.models_per_fold must be >= 1, got 0" ;;
  image-sizes-count)
    set -- cv --folds 2 "${args[@]}" --models-per-fold 1 --set "cv.image_sizes=[28, 64]"
    want="cv.image_sizes gives 2 sizes for cv.models_per_fold = 1 models: each size needs a model of its own" ;;
  image-size-range)
    set -- cv --folds 2 "${args[@]}" --models-per-fold 2 --set "cv.image_sizes=[28, 8]"
    want="each value of cv.image_sizes must be in \\[16, 4096\\], got 8 \\(--set\\)" ;;
  cv-report-elsewhere)
    set -- cv-report --run-dir "$work/images"
    want="$work/images is not a cross-validation folder \\(no folds.csv\\)" ;;
  *) echo "unknown case $case"; exit 1 ;;
esac
name=carotid_bad_input_$case
expect_run "$name" 2 "$want" -- "$carotid" "$@" || exit 1
expect_nothing_written "$name" "$work/out" || exit 1
echo PASS
