#!/usr/bin/env bash
# cv_ensemble.sh CAROTID MPIEXEC DATA WORK: `cv --folds 2 --models-per-fold 2`
# with cv.image_sizes [28, 32] under two ranks on the real ultrasound images
# (shared data; exit 77 = skipped when absent), one epoch per model: each
# fold trains two models on the same persons with train.seed at 28 pixels and
# train.seed + 1 at 32, the fold's test predictions are the mean of its
# models', the report shows one model's mean beside the ensembles', and
# predict --model CV averages all four models, each at its size. A
# folder started with two models per fold refuses to go on with one or
# three, or with other image sizes. data.seed keeps the folds while
# train.seed changes the weights.
# jobs/carotid-scratch.toml (train.best_metric = "none") judges and ships the
# final models. A seed drawn by train.seed = -1 holds for every fold's job.
set -euo pipefail
carotid=$1 mpiexec=$2 data=$3 work=$4
source "$(dirname "${BASH_SOURCE[0]}")/breast_lib.sh"
common=("${breast[@]}" --epochs 1 --set obs.tensorboard=false)
cv=$work/cv

"$mpiexec" -n 2 "$carotid" cv --folds 2 --models-per-fold 2 --set "cv.image_sizes=[28, 32]" "${common[@]}" \
  --run-dir "$cv" 2>&1 | tee "$work/cv.log"
for f in folds.csv cv_report.json cv_report.txt test_report.json test_predictions.csv; do
  [ -s "$cv/$f" ] || fail "$cv/$f missing"
done
for k in 0 1; do
  for f in test_report.json test_predictions.csv model-0/split.csv model-1/split.csv model-0/models/best_model.h5 \
           model-1/models/best_model.h5 model-0/test_predictions.csv model-1/test_predictions.csv; do
    [ -s "$cv/fold-$k/$f" ] || fail "$cv/fold-$k/$f missing"
  done
  cmp -s "$cv/fold-$k/model-0/split.csv" "$cv/fold-$k/model-1/split.csv" ||
    fail "fold $k's two models were trained and tested on other persons"
  cmp -s "$cv/fold-$k/model-0/test_predictions.csv" "$cv/fold-$k/model-1/test_predictions.csv" &&
    fail "fold $k's two models predicted alike: the second seed changed nothing"
  # Columns image,person,label,loss,prob_0,prob_1: the fold's P(1) is the mean of its models'.
  paste -d, "$cv/fold-$k"/model-{0,1}/test_predictions.csv "$cv/fold-$k/test_predictions.csv" | tail -n +2 |
    awk -F, '{ if ($1 != $7 || $1 != $13) { print "rows differ: " $1 " " $7 " " $13; bad = 1 }
               m = ($6 + $12) / 2; if (m - $18 > 2e-6 || $18 - m > 2e-6) { print $1 ": mean " m ", fold " $18; bad = 1 } }
             END { exit bad }' || fail "fold $k's probabilities are not the mean of its two models'"
done
grep -q "fold 0 of 2, model 1 of 2: training in .*model-1 (train.seed 1338, 32 pixels)" "$work/cv.log" ||
  fail "model 1 did not train with train.seed + 1 at 32 pixels"
for m in 0 1; do
  grep -q "^image_size = $(( 28 + 4 * m ))  # cv.image_sizes" "$cv/fold-1/model-$m/config.toml" ||
    fail "fold 1's model $m did not keep its image size in config.toml"
done
grep -q '"models_per_fold": 2' "$cv/cv_report.json" || fail "cv_report.json does not say 2 models per fold"
grep -q '"single_model_mean"' "$cv/cv_report.json" || fail "cv_report.json has no single_model_mean"
grep -q "one model's mean" "$cv/cv_report.txt" || fail "cv_report.txt has no column for one model's mean"

mkdir -p "$work/some"
for p in $(tail -n +2 "$cv/folds.csv" | head -10 | cut -d, -f1); do ln -s "$data/images/$p" "$work/some/$p"; done
"$carotid" predict --model "$cv" --input "$work/some" 2>&1 | tee "$work/predict.log"
grep -q "ensemble of 4 models" "$work/predict.log" || fail "predict --model CV did not use the 2 x 2 models"
grep -q '"ensemble"' "$cv/cv_report.json" || fail "cv_report.json has no threshold for the ensemble"
grep -q "cv_report.json: chosen on the folds' out-of-fold persons" "$work/predict.log" ||
  fail "predict --model CV did not decide at cv_report.json's threshold"
# Each model of the ensemble sees the images at its own size: the ensemble's
# P(1) of an image is the mean of the four models' own predictions.
for k in 0 1; do
  for m in 0 1; do
    "$carotid" predict --model "$cv/fold-$k/model-$m/models/best_model.h5" --input "$work/some" \
      --out "$work/alone-$k-$m" >"$work/alone-$k-$m.log" 2>&1 || fail "predict with fold $k's model $m failed"
  done
done
# Columns image,person,p_0,p_1,predicted.
paste -d, "$work"/alone-{0,1}-{0,1}/images.csv "$cv/predictions/images.csv" | tail -n +2 |
  awk -F, '{ m = ($4 + $9 + $14 + $19) / 4; if ($1 != $21 || m - $24 > 2e-6 || $24 - m > 2e-6) { print $1 ": mean " m ", ensemble " $24; bad = 1 } }
           END { exit bad }' || fail "predict --model CV is not the mean of its models, each at its own size"

cp "$cv/cv_report.json" "$work/first.json"
for per_fold in 1 3; do
  status=0
  "$carotid" cv --folds 2 --models-per-fold $per_fold "${common[@]}" --run-dir "$cv" >"$work/again-$per_fold.log" 2>&1 ||
    status=$?
  [ "$status" = 2 ] || fail "continued with $per_fold models per fold: exit $status, expected 2"
  grep -q "fold-0 holds 2 model-m/ folders, not cv.models_per_fold = $per_fold" "$work/again-$per_fold.log" ||
    fail "continued with $per_fold models per fold: $(tail -2 "$work/again-$per_fold.log")"
done
# Continued with model 1 at 64 pixels instead of the 32 it was trained at.
status=0
"$carotid" cv --folds 2 --models-per-fold 2 --set "cv.image_sizes=[28, 64]" "${common[@]}" --run-dir "$cv" \
  >"$work/again-64.log" 2>&1 || status=$?
[ "$status" = 2 ] || fail "continued with other image sizes: exit $status, expected 2"
grep -q "fold-0/model-1/config.toml: this model began with train.seed 1338 at 32 pixels, this cv gives it train.seed 1338 at 64 pixels" \
  "$work/again-64.log" || fail "continued with other image sizes: $(tail -2 "$work/again-64.log")"
cmp "$work/first.json" "$cv/cv_report.json" || fail "a refused cv changed cv_report.json"

# data.seed 1337 with train.seed 5: the folds of train.seed 1337, other weights.
"$carotid" cv --folds 2 --fold 0 --seed 5 --set data.seed=1337 "${common[@]}" --run-dir "$work/data-seed" \
  >"$work/data-seed.log" 2>&1 || fail "cv with data.seed failed: $(tail -3 "$work/data-seed.log")"
cmp "$cv/folds.csv" "$work/data-seed/folds.csv" || fail "data.seed 1337 dealt other folds than train.seed 1337"
cmp "$cv/fold-0/model-0/split.csv" "$work/data-seed/fold-0/split.csv" || fail "data.seed 1337 split fold 0 otherwise"
cmp -s "$cv/fold-0/model-0/test_predictions.csv" "$work/data-seed/fold-0/test_predictions.csv" &&
  fail "train.seed 5 predicted as train.seed 1337 did"
# jobs/carotid-scratch.toml (train.best_metric = "none"): the fold is judged
# by its final model, and predict finds it there. Two ranks, since every rank
# reads the file rank 0 wrote. At 28 pixels through the ImageNet stem, as
# above: the job's 64 pixels through the small stem took half the test's
# time (28 of 56 s) to show which model judges the fold.
jobs=$(cd "$(dirname "${BASH_SOURCE[0]}")/../../../jobs" && pwd)
"$mpiexec" -n 2 "$carotid" cv --config "$jobs/carotid-scratch.toml" --folds 2 --fold 0 --epochs 1 \
  --image-size 28 --set model.stem=imagenet \
  --root-dir "$data/images" --label-excel "$data/label.xlsx" --set data.cache_dir="$work/cache" \
  --set obs.tensorboard=false --run-dir "$work/final" >"$work/final.log" 2>&1 ||
  fail "cv with jobs/carotid-scratch.toml failed: $(tail -3 "$work/final.log")"
[ -s "$work/final/fold-0/models/final_model.h5" ] && [ ! -e "$work/final/fold-0/models/best_model.h5" ] ||
  fail "best_metric none: want final_model.h5 alone, got $(ls "$work/final/fold-0/models")"
grep -q '"model": ".*/fold-0/models/final_model.h5"' "$work/final/fold-0/test_report.json" ||
  fail "fold 0 was not judged by its final model"
"$carotid" predict --model "$work/final" --input "$work/some" >"$work/predict-final.log" 2>&1 ||
  fail "predict --model CV over final models failed: $(tail -3 "$work/predict-final.log")"
# train.seed = -1: the first start draws a seed and keeps it in the folder's
# config.toml; another fold's job (an array task, a requeue) goes on with it,
# where a fresh draw would deal other folds and be refused.
for k in 0 1; do
  "$carotid" cv --folds 2 --fold $k --set train.seed=-1 "${common[@]}" --run-dir "$work/drawn" \
    >"$work/drawn-$k.log" 2>&1 || fail "cv --fold $k with train.seed -1: $(tail -3 "$work/drawn-$k.log")"
done
drawn=$(grep -oP '^seed = \K[0-9]+(?=  # drawn)' "$work/drawn/config.toml") ||
  fail "the folder's config.toml does not keep the drawn seed"
grep -q "^seed = $drawn  # cv fold 1" "$work/drawn/fold-1/config.toml" || fail "fold 1 trained with another seed"
pass
