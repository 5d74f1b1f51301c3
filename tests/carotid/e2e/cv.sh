#!/usr/bin/env bash
# cv.sh CAROTID MPIEXEC DATA WORK: `cv --folds 3` under two ranks on the real
# BreastMNIST ultrasound images (shared data; exit 77 = skipped when absent),
# one epoch per fold: every person is in exactly one fold's test set, each
# fold is a full train run, and the gathered report has every file; one rank
# deals the same folds; a second `cv` on the same folder finds every fold
# done, `cv-report` writes the same report again; `predict --model CV`
# averages the fold models (checked against each model alone), with flips
# under --tta; each fold stops early on its own (its patience and best are
# its own, not the previous fold's); `--fold` without `--run-dir` stops at
# the door, and so does cv-report over a damaged fold.
set -euo pipefail
carotid=$1 mpiexec=$2 data=$3 work=$4
source "$(dirname "${BASH_SOURCE[0]}")/breast_lib.sh"
common=("${breast[@]}" --epochs 1 --set obs.tensorboard=false)

"$mpiexec" -n 2 "$carotid" cv --folds 3 "${common[@]}" --output-dir "$work/out" 2>&1 | tee "$work/cv.log"
cv=$(ls -d "$work"/out/cv_*)
for f in folds.csv cv_report.json cv_report.txt test_report.json test_predictions.csv confusion_matrix.png \
         roc_curve.png; do
  [ -s "$cv/$f" ] || fail "$cv/$f missing"
done
for k in 0 1 2; do
  for f in split.csv models/best_model.h5 test_report.json test_predictions.csv; do
    [ -s "$cv/fold-$k/$f" ] || fail "$cv/fold-$k/$f missing"
  done
done
# 214 persons, each tested once: in one fold's split as test, in the pooled predictions.
[ "$(tail -n +2 "$cv/folds.csv" | wc -l)" = 214 ] || fail "folds.csv does not list 214 persons"
tested=$(cat "$cv"/fold-*/split.csv | grep -c ',test,')
[ "$tested" = 214 ] || fail "$tested persons tested over the folds, expected 214"
[ "$(cat "$cv"/fold-*/split.csv | grep ',test,' | cut -d, -f1 | sort -u | wc -l)" = 214 ] ||
  fail "a person is tested by two folds"
[ "$(tail -n +2 "$cv/test_predictions.csv" | cut -d, -f2 | sort -u | wc -l)" = 214 ] ||
  fail "the pooled predictions do not cover the 214 persons"
grep -q "person_auc .* ± " "$work/cv.log" || fail "no mean ± std of person_auc in the log"

# One rank deals the same folds as two: fold 0 alone, in a folder of its own.
"$carotid" cv --folds 3 --fold 0 "${common[@]}" --run-dir "$work/one-rank" >"$work/one-rank.log" 2>&1 ||
  fail "cv --fold 0 on one rank failed: $(tail -3 "$work/one-rank.log")"
cmp "$cv/folds.csv" "$work/one-rank/folds.csv" || fail "one rank dealt other folds than two"
grep -q "folds 1, 2 still to run" "$work/one-rank.log" || fail "cv --fold 0 did not say which folds are left"

"$mpiexec" -n 2 "$carotid" cv --folds 3 "${common[@]}" --run-dir "$cv" 2>&1 | tee "$work/again.log"
[ "$(grep -c 'done before' "$work/again.log")" = 3 ] || fail "a second cv did not find its 3 folds done"
cp "$cv/cv_report.json" "$work/first.json"
"$carotid" cv-report --run-dir "$cv" 2>&1 | tee "$work/report.log"
cmp "$work/first.json" "$cv/cv_report.json" || fail "cv-report wrote another report"

# The fold models as one ensemble: each person's probabilities are the mean
# of the three models' (images and persons alike), with and without flips.
mkdir -p "$work/some"
for p in $(tail -n +2 "$cv/folds.csv" | head -20 | cut -d, -f1); do ln -s "$data/images/$p" "$work/some/$p"; done
for k in 0 1 2; do
  "$carotid" predict --model "$cv/fold-$k/models/best_model.h5" --input "$work/some" --out "$work/pred-$k" >/dev/null 2>&1 ||
    fail "predict with fold $k's model failed"
done
"$carotid" predict --model "$cv" --input "$work/some" --labels "$data/label.xlsx" 2>&1 | tee "$work/ensemble.log"
grep -q "ensemble of 3 models" "$work/ensemble.log" || fail "predict --model CV did not use the 3 fold models"
[ -s "$cv/predictions/metrics.json" ] || fail "no $cv/predictions/metrics.json"
paste -d, "$work"/pred-{0,1,2}/persons.csv "$cv/predictions/persons.csv" | tail -n +2 |
  awk -F, '{ m = ($4 + $9 + $14) / 3; if (m - $19 > 2e-6 || $19 - m > 2e-6) { print "person " $1 ": mean " m ", ensemble " $19; bad = 1 } }
           END { exit bad }' || fail "the ensemble's probabilities are not the mean of its models'"
"$carotid" predict --model "$cv" --input "$work/some" --tta --out "$work/pred-tta" >/dev/null 2>&1 ||
  fail "predict --tta failed"
cmp -s "$work/pred-tta/persons.csv" "$cv/predictions/persons.csv" && fail "--tta changed no probability"

# Early stopping per fold: with a min_delta no evaluation can beat, only a
# fold's first evaluation improves, so with patience 1 each fold stops after
# its second; a fold that took the previous fold's best would stop after its
# first.
"$carotid" cv --folds 2 "${breast[@]}" --epochs 5 --set obs.tensorboard=false --set train.early_stop_patience=1 \
  --set train.early_stop_min_delta=100 --run-dir "$work/early" >"$work/early.log" 2>&1 ||
  fail "cv with early stopping failed: $(tail -3 "$work/early.log")"
[ "$(grep -c "stopping early at step" "$work/early.log" || true)" = 2 ] || fail "not both folds stopped early"
for k in 0 1; do
  evals=$(grep -c '"eval_person_auc"' "$work/early/fold-$k/metrics.jsonl" || true)
  [ "$evals" = 2 ] || fail "fold $k evaluated $evals times before stopping, expected 2"
done

status=0
"$carotid" cv --fold 1 "${common[@]}" >"$work/bad.log" 2>&1 || status=$?
[ "$status" = 2 ] || fail "cv --fold without --run-dir: exit $status, expected 2"
grep -q "give --run-dir CV" "$work/bad.log" || fail "cv --fold without --run-dir: $(cat "$work/bad.log")"

# A fold's predictions damaged after the fact: cv-report names the file and
# line, exits 2, and leaves the report it wrote before as it was.
sed -i '3s/,0,/,zero,/' "$cv/fold-1/test_predictions.csv"
status=0
"$carotid" cv-report --run-dir "$cv" >"$work/damaged.log" 2>&1 || status=$?
[ "$status" = 2 ] || fail "cv-report over a damaged fold: exit $status, expected 2"
grep -q "fold-1/test_predictions.csv: line 3: label 'zero'" "$work/damaged.log" ||
  fail "cv-report over a damaged fold: $(cat "$work/damaged.log")"
cmp "$work/first.json" "$cv/cv_report.json" || fail "a refused cv-report changed cv_report.json"
pass
