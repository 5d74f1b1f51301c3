#!/usr/bin/env bash
# breast.sh CAROTID MPIEXEC DATA WORK PYTHON TB_CHECK: apps/carotid as users
# run it, on the real BreastMNIST ultrasound images (shared data; exit 77 =
# skipped when absent), under two ranks: train writes every output of a run,
# its figures also as TensorBoard images (read back with TensorBoard by
# TB_CHECK, tests/peers/tensorboard_reads_events.py, where PYTHON has it);
# with report.cam, the test images' Grad-CAM maps in RUN/cam;
# the temperature fitted and the threshold chosen on validation are kept in
# the model, the test report gives the figures before and after (the image
# AUC the same), and predict applies both (its probabilities are the test
# report's); predict scores the test persons, with --cam their maps;
# --load-model continues on the same split.
set -euo pipefail
carotid=$1 mpiexec=$2 data=$3 work=$4 python=$5 tb_check=$6
source "$(dirname "${BASH_SOURCE[0]}")/breast_lib.sh"

"$mpiexec" -n 2 "$carotid" "${breast[@]}" --epochs 2 --output-dir "$work/out" --set calibrate.temperature=fit \
  --set report.cam=true 2>&1 | tee "$work/train.log"
run=$(ls -d "$work"/out/train_*)
for f in config.toml metrics.jsonl split.csv test_report.json confusion_matrix.txt \
         confusion_matrix.png roc_curve.png reliability.png reliability_person.png models/best_model.h5 \
         models/final_model.h5 logs/rank-1.log; do
  [ -s "$run/$f" ] || fail "$run/$f missing"
done
grep -q '"person_auc"\|"auc"' "$run/test_report.json" || fail "no AUC in test_report.json"
grep -q '"at_threshold"' "$run/test_report.json" || fail "no figures at the chosen threshold in test_report.json"
# Calibration at both levels: ece and brier, and 15 reliability bins that
# hold every image, and every person, once.
"$python" - "$run/test_report.json" <<'PY' || fail "test_report.json lacks the calibration figures"
import json, sys
report = json.load(open(sys.argv[1]))
for level in ("images", "persons"):
    figures = report[level]
    assert 0 <= figures["ece"] <= 1 and 0 <= figures["brier"] <= 1, (level, figures["ece"], figures["brier"])
    bins = figures["reliability"]
    assert len(bins) == 15 and sum(b["count"] for b in bins) == figures["count"], (level, bins)
PY
threshold=$(sed -n 's/.*INFO  threshold \([0-9.e-]*\) (youden on [0-9]* validation persons).*/\1/p' "$work/train.log")
[ -n "$threshold" ] || fail "train chose no threshold (youden on the validation persons)"
read -r temperature nll_before nll_after < <(sed -n \
  's/.*INFO  temperature \([0-9.e+-]*\) fitted on [0-9]* validation images: their NLL \([0-9.e+-]*\) -> \([0-9.e+-]*\),.*/\1 \2 \3/p' \
  "$work/train.log")
[ -n "$nll_after" ] || fail "train fitted no temperature on the validation images"
"$python" - "$run/test_report.json" "$temperature" "$nll_before" "$nll_after" <<'PY' || fail "the temperature is not the report's"
import json, sys
report, t, before, after = json.load(open(sys.argv[1])), *map(float, sys.argv[2:])
assert after <= before, ("fitting raised the validation NLL", before, after)
assert abs(report["temperature"] - t) <= 1e-5 * t, (report["temperature"], t)
if t != 1.0:
    assert abs(report["before_temperature"]["image_auc"] - report["images"]["auc"]) < 1e-9, "the image AUC moved"
PY
ls "$run"/tb/events.out.tfevents.* >/dev/null || fail "$run/tb holds no TensorBoard events"
status=0
"$python" "$tb_check" images "$run/tb" test/confusion_matrix="$run/confusion_matrix.png" \
  test/roc_curve="$run/roc_curve.png" test/reliability="$run/reliability.png" || status=$?
[ "$status" = 0 ] || [ "$status" = 77 ] || fail "TensorBoard does not read the figures in $run/tb"
grep -Eq "test \(best_model.h5, [0-9]+ images\): person auc" "$work/train.log" || fail "no test line"
# Every person once, in one part; 214 persons with labels and images.
[ "$(tail -n +2 "$run/split.csv" | cut -d, -f1 | sort -u | wc -l)" = 214 ] || fail "split.csv does not list 214 persons"

# predict on the test persons' folders, scored against the sheet.
mkdir -p "$work/test-persons"
for p in $(grep ',test,' "$run/split.csv" | cut -d, -f1); do ln -s "$data/images/$p" "$work/test-persons/$p"; done
"$mpiexec" -n 2 "$carotid" predict --model "$run/models/best_model.h5" --input "$work/test-persons" \
  --labels "$data/label.xlsx" --out "$work/pred" --cam 2>&1 | tee "$work/predict.log"
[ "$(tail -n +2 "$work/pred/persons.csv" | wc -l)" = "$(grep -c ',test,' "$run/split.csv")" ] ||
  fail "persons.csv does not hold every test person"
grep -q "scored against" "$work/predict.log" || fail "predict did not score"
grep -q "decision threshold on P(1): $threshold\$" "$work/predict.log" ||
  fail "predict did not decide at the model's threshold $threshold"
grep -q '"person_at_threshold"' "$work/pred/metrics.json" || fail "no figures at the threshold in metrics.json"
"$python" - "$run/test_predictions.csv" "$work/pred/images.csv" <<'PY' || fail "predict's probabilities are not the test report's"
import csv, os, sys
report = {os.path.basename(r["image"]): float(r["prob_1"]) for r in csv.DictReader(open(sys.argv[1]))}
predicted = {os.path.basename(r["image"]): float(r["p_1"]) for r in csv.DictReader(open(sys.argv[2]))}
assert report and set(report) == set(predicted), (len(report), len(predicted))
worst = max(abs(report[k] - predicted[k]) for k in report)
assert worst < 1e-5, worst
PY

# report.cam: the test images' maps beside the test report, one a row of test_predictions.csv.
[ "$(tail -n +2 "$run/cam/maps.csv" | wc -l)" = "$(tail -n +2 "$run/test_predictions.csv" | wc -l)" ] ||
  fail "report.cam did not map every test image"
# --cam: a map per image, of its predicted class, in maps.h5 and as an
# overlay; a contact sheet per person, its images by probability; the log
# says the pictures carry patient data. Asked again, the folder is refused
# before any work and nothing in it changes.
grep -q "Grad-CAM maps of .* in $work/pred/cam: .* carry patient data" "$work/predict.log" || fail "no Grad-CAM line"
# The recipe's ImageNet stem at 28 pixels leaves layer4 1 x 1: said, maps of 0.
grep -q "Grad-CAM: .* its maps are flat (0) and show nothing; model.stem = \"small\" keeps a map of 4 x 4" \
  "$work/predict.log" || fail "no warning that 1 x 1 maps show nothing"
/usr/bin/python3 - "$work/pred" <<'PY' || fail "the Grad-CAM outputs are not what they should be"
import csv, os, sys
import h5py
import numpy as np
out = sys.argv[1]
images = list(csv.DictReader(open(f"{out}/images.csv")))
rows = list(csv.DictReader(open(f"{out}/cam/maps.csv")))
assert len(rows) == len(images), (len(rows), len(images))
predicted = {r["image"]: r["predicted"] for r in images}
with h5py.File(f"{out}/cam/maps.h5") as f:
    maps, prob = f["maps"][()], f["probability"][()]
assert maps.shape == (len(rows), 28, 28), maps.shape
assert maps.min() >= 0 and maps.max() <= 1 + 1e-6
assert all(abs(m.max() - 1) < 1e-5 or m.max() == 0 for m in maps)
persons = {}
for r in rows:
    assert r["predicted"] == predicted[r["image"]], r
    assert os.path.isfile(f"{out}/cam/{r['overlay']}"), r["overlay"]
    assert abs(float(r["probability"]) - prob[int(r["index"])]) < 1e-6
    persons.setdefault(r["person"], []).append(r)
for p in persons:
    assert os.path.isfile(f"{out}/cam/{p}.png"), p
print(f"Grad-CAM: {len(rows)} maps of {len(persons)} persons")
PY
before=$(cd "$work/pred/cam" && find . -type f -exec md5sum {} + | sort | md5sum)
set +e
"$carotid" predict --model "$run/models/best_model.h5" --input "$work/test-persons" --out "$work/pred" --cam \
  >"$work/cam-again.log" 2>&1
status=$?
set -e
[ "$status" = 2 ] && grep -q "$work/pred/cam already holds maps" "$work/cam-again.log" ||
  fail "predict --cam into a folder with maps exited $status: $(tail -n 3 "$work/cam-again.log")"
[ "$(cd "$work/pred/cam" && find . -type f -exec md5sum {} + | sort | md5sum)" = "$before" ] ||
  fail "the refused predict --cam changed the maps"

# A continued run reuses the split: no test person reaches training. It
# trains with mixup, whose partners come from the whole training set.
"$mpiexec" -n 2 "$carotid" "${breast[@]}" --epochs 1 --output-dir "$work/more" --set aug.mixup=0.4 \
  --load-model "$run/models/best_model.h5" 2>&1 | tee "$work/more.log"
grep -q "split: as in $run/split.csv" "$work/more.log" || fail "continued run drew a new split"
cmp <(sort "$run/split.csv") <(sort "$work"/more/train_*/split.csv) || fail "continued run's split differs"
pass
