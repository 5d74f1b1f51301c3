#!/usr/bin/env bash
# plan_t4.sh BUILD [GPUS]: docs/training.md's table of GPT-2 fine-tuned on
# two T4s (or GPUS, e.g. l4x2), from `summarize plan` itself: each model
# and way of training, under each dist.shard, with train.micro_batch and
# train.recompute "auto" over a rank's share of 256 sequences of 1024
# tokens (train.global_batch = 512 on two), 65 of them summary
# (gen.max_new_tokens = 64); fp16 on a T4; the step alone, without ROUGE
# during training (eval.rouge_samples = 0: gen.batch sizes its generation,
# the job file's choice). A cell: the micro-batch "auto"
# takes, "+r" when recomputing, and the plan's total in MB; "-" where
# nothing fits.
set -uo pipefail
build=${1:?usage: plan_t4.sh BUILD [GPUS]} gpus=${2:-t4x2}
summarize=$build/apps/summarize
work=$(mktemp -d) && trap 'rm -rf "$work"' EXIT
declare -A shape=([gpt2]="12 768 12" [gpt2-medium]="24 1024 16" [gpt2-large]="36 1280 20" [gpt2-xl]="48 1600 25")
common=(--gpus "$gpus" --shard all --set data.train_csv=unused.csv --set train.global_batch=512
        --set 'train.micro_batch="auto"' --set 'train.recompute="auto"' --set gen.max_new_tokens=64
        --set 'train.precision="fp16"' --set eval.rouge_samples=0)
declare -A ways=(
  [1]="whole, fp32 state|"
  [2]="whole, 8-bit state|--set 'train.optimizer_state=\"8bit\"'"
  [3]="whole, sharded masters|--set 'train.master_weights=\"sharded\"'"
  [4]="whole, sharded masters, 8-bit state|--set 'train.master_weights=\"sharded\"' --set 'train.optimizer_state=\"8bit\"'"
  [5]="LoRA r = 8, all four projections|--set 'model.lora.targets=[\"attn.c_attn\",\"attn.c_proj\",\"mlp.c_fc\",\"mlp.c_proj\"]'")
echo "| GPT-2, $gpus | training | dist.shard = \"none\" | \"optimizer\" | \"gradients\" |"
echo "|---|---|---|---|---|"
for preset in gpt2 gpt2-medium gpt2-large gpt2-xl; do
  read -r layers width heads <<<"${shape[$preset]}"
  mkdir -p "$work/$preset"
  printf '{"n_layer": %s, "n_embd": %s, "n_head": %s, "n_positions": 1024, "vocab_size": 50257}\n' \
    "$layers" "$width" "$heads" >"$work/$preset/config.json"
  for i in 1 2 3 4 5; do
    IFS='|' read -r label flags <<<"${ways[$i]}"
    eval "extra=($flags)"
    "$summarize" plan "${common[@]}" --set model.init_from="hf:$work/$preset" "${extra[@]}" >"$work/out" 2>&1
    cells=$(python3 - "$work/out" <<'PY'
import sys
rows = {}
for line in open(sys.argv[1]):
    if line.startswith("| ") and line.count("|") >= 5:
        cols = [c.strip() for c in line.strip().strip("|").split("|")]
        rows[cols[0]] = cols[1:]
micro, rec, total, fits = (rows.get(k, ["-"] * 3) for k in ("train.micro_batch", "train.recompute", "total", None))
out = []
for m, r, t in zip(micro, rec, total):
    out.append("-" if m == "-" else f"{m.split()[0]}{'+r' if r == 'blocks' else ''}, {t}")
fit = [c for k, c in rows.items() if k.startswith("fits in")]
if fit:
    out = [o if f.startswith("yes") else "-" for o, f in zip(out, fit[0])]
print(" | ".join(out))
PY
)
    echo "| $preset | $label | $cells |"
  done
done
