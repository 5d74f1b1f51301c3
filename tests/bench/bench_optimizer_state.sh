#!/usr/bin/env bash
# train.optimizer_state "fp32" against "8bit" on a real run: GPT-2's tiny
# preset at block 512 on SciTLDR, 2 ranks on the CPU, 100 steps, evaluated
# every 20 on 64 validation rows. Prints each evaluation's loss side by side
# with their ratio, ms per step and the optimizer's MB in the memory plan.
#   cd build && ../tests/bench/bench_optimizer_state.sh apps/summarize [SCITLDR_DIR] [WORK]
set -euo pipefail
summarize=$(realpath "$1")
data=${2:-$(dirname "$0")/../../../shared/data/scitldr}
work=${3:-$(mktemp -d)}
mkdir -p "$work"
python3 -c 'import csv, sys; csv.writer(sys.stdout).writerows(list(csv.reader(open(sys.argv[1], newline="")))[:65])' \
  "$data/validation.csv" >"$work/validation.csv"
for state in fp32 8bit; do
  rm -rf "$work/$state"
  mpiexec -n 2 "$summarize" train --set model.preset=tiny --set model.block_size=512 \
    --set data.train_csv="$data/train.csv" --set data.val_csv="$work/validation.csv" \
    --set train.max_steps=100 --set train.micro_batch=8 --set train.grad_accum=1 --set train.eval_every=20 \
    --set train.lr=1e-3 --set train.warmup_steps=10 --set eval.rouge_samples=0 --set train.optimizer_state=$state \
    --set dist.device=cpu --set train.precision=fp32 --set train.out_dir="$work/$state" \
    --set data.cache_dir="$work/cache" >"$work/$state.log" 2>&1
done
python3 - "$work" <<'PY'
import json, sys
work = sys.argv[1]
def rows(state):
    return [json.loads(line) for line in open(f"{work}/{state}/metrics.jsonl")]
def evals(state):
    return {r["step"]: r["eval_loss"] for r in rows(state) if "eval_loss" in r}
def ms(state):
    steps = [r["ms"] for r in rows(state) if "ms" in r and "loss" in r][10:]
    return sum(steps) / len(steps)
def optimizer_mb(state):
    return next(r["optimizer_mb"] for r in rows(state) if "optimizer_mb" in r)
a, b = evals("fp32"), evals("8bit")
print("| step | eval_loss fp32 | eval_loss 8bit | 8bit / fp32 |\n|---|---|---|---|")
for step in sorted(a):
    print(f"| {step} | {a[step]:.5f} | {b[step]:.5f} | {b[step] / a[step]:.5f} |")
print(f"ms per step (after 10): fp32 {ms('fp32'):.0f}, 8bit {ms('8bit'):.0f}")
print(f"optimizer MB per rank (memory plan): fp32 {optimizer_mb('fp32')}, 8bit {optimizer_mb('8bit')}")
PY
