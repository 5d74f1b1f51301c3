#!/usr/bin/env bash
# rouge_during_training.sh SUMMARIZE MPIEXEC WORK: the ROUGE training
# evaluates (eval.rouge_samples) is `summarize eval`'s of the same weights on
# the same examples, exactly, and picks the best model.
#   2 ranks, a one-layer model, 6 steps evaluated every 2 on the first 7
#   validation examples (an odd number: one rank's shard is padded), best
#   model by eval_rouge1 (train.best_mode "auto": larger is better). ROUGE is
#   above zero and moves between evaluations (an all-zero or frozen score
#   fails). Then `summarize eval --examples 7` of
#   models/best_model.h5 on 2 ranks: its eval.json F1s are the metrics.jsonl
#   row of the best evaluation, bit for bit (both are written round-trip).
set -uo pipefail
summarize=$1 mpiexec=$2 work=$3
rm -rf "$work" && mkdir -p "$work"
fail() { echo "FAIL: $*"; for f in "$work"/*.log; do echo "--- $f"; tail -30 "$f"; done; exit 1; }
common=(--set train.out_dir="$work/run" --set data.cache_dir="$work/cache" --set dist.device=cpu
        --set gen.max_new_tokens=12)
"$mpiexec" -n 2 "$summarize" train "${common[@]}" --set model.n_layer=1 --set train.max_steps=6 \
  --set train.warmup_steps=0 --set train.eval_every=2 --set eval.rouge_samples=7 \
  --set train.best_metric=eval_rouge1 >"$work/train.log" 2>&1 ||
  fail "training exited with $?"
grep -q "ROUGE of 7 greedy summaries (eval.rouge_samples): [0-9.]* s" "$work/train.log" ||
  fail "training did not log the time ROUGE took"
"$mpiexec" -n 2 "$summarize" eval "${common[@]}" --checkpoint "$work/run/models/best_model.h5" --examples 7 \
  >"$work/eval.log" 2>&1 || fail "eval exited with $?"
grep -q "ROUGE on 7 validation examples" "$work/eval.log" || fail "eval did not score the first 7 examples"
python3 - "$work/run/metrics.jsonl" "$work/run/eval.json" <<'PY' || fail "the ROUGE of training and of eval differ"
import json, sys
rows = [json.loads(line) for line in open(sys.argv[1])]
evals = [r for r in rows if "eval_rouge1" in r]
assert [r["step"] for r in evals] == [2, 4, 6], [r["step"] for r in evals]
scores = [r["eval_rouge1"] for r in evals]
assert max(scores) > 0 and len(set(scores)) > 1, f"rouge1 at each evaluation: {scores}"
best = max(evals, key=lambda r: r["eval_rouge1"])  # the first of equals, as the trainer keeps it
ours = json.load(open(sys.argv[2]))["rouge"]
for name in ("rouge1", "rouge2", "rougeL", "rougeLsum"):
    if ours[name]["f1"] != best["eval_" + name]:
        sys.exit(f"{name}: eval {ours[name]['f1']!r}, training at step {best['step']} {best['eval_' + name]!r}")
print(f"step {best['step']}: rouge1 {best['eval_rouge1']!r} in both")
PY
# Resumed to judge by another metric (its direction "auto" too: smaller),
# the run starts its best over rather than hold eval_loss to ROUGE's best:
# the step-8 evaluation is the best.
"$mpiexec" -n 2 "$summarize" train "${common[@]}" --set model.n_layer=1 --set train.max_steps=8 \
  --set train.warmup_steps=0 --set train.eval_every=2 --set eval.rouge_samples=7 \
  --set train.best_metric=eval_loss >"$work/resume.log" 2>&1 ||
  fail "the resumed training exited with $?"
grep -q "eval_rouge1 max was the run's best metric and direction, now eval_loss min: the best model and early stopping start over" \
  "$work/resume.log" && grep -q "new best eval_loss .* models/best_model.h5" "$work/resume.log" ||
  fail "the resume did not start its best over"
echo "PASS"
