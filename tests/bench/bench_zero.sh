#!/usr/bin/env bash
# bench_zero.sh BUILD OUT [PRESET]: dist.shard's and LoRA's memory and time on
# the CPU. GPT-2 PRESET (default gpt2-medium) from scratch on the built-in
# dialogues, 2 ranks, fp32, micro-batch 2 of 256 tokens, 4 steps under each
# dist.shard; then LoRA (rank 8 on all four projections) on the "none" run's
# final model exported as its base. Then train.master_weights (issue 62) in
# bf16, which the CPU's autocast runs: "bf16" (dist.shard = "gradients",
# replicated fp32 weights), "masters" (sharded masters) and "masters-8bit"
# (with 8-bit moments). SETTINGS="none lora" runs only those.
# Prints, per setting, the memory plan's total (metrics.jsonl's first row)
# against the measured peak of tensor bytes on rank 0 (peak_mem_mb), the
# plan's weights and optimizer terms, the mean time of steps 2-4 and the
# last step's loss; then compares the last checkpoints: "optimizer" must
# equal "none" to the bit, "gradients" within 1e-4, "masters" "bf16" to the
# bit. About 25 minutes and 11 GB of memory for gpt2-medium; by hand.
set -uo pipefail
build=$(realpath "$1") out=$2 preset=${3:-gpt2-medium}
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
source "$repo/env/mpi_env.sh"
mkdir -p "$out" && cd "$out" || exit 1
printf '| setting | planned MB | measured peak MB | planned / measured | weights MB | AdamW state MB, planned / kept | s/step | loss at step 4 |\n'
printf '|---|---|---|---|---|---|---|---|\n'
for shard in ${SETTINGS:-none optimizer gradients lora bf16 masters masters-8bit}; do
  rm -rf "$shard"
  how=(--set "dist.shard=$shard")
  bf16=(--set train.precision=bf16 --set dist.shard=gradients)
  case $shard in
    bf16) how=("${bf16[@]}") ;;
    masters) how=("${bf16[@]}" --set train.master_weights=sharded) ;;
    masters-8bit) how=("${bf16[@]}" --set train.master_weights=sharded --set train.optimizer_state=8bit) ;;
  esac
  if [ "$shard" = lora ]; then
    rm -rf base
    "$build/apps/summarize" export --checkpoint none/models/final_model.h5 --out base >base.log 2>&1 ||
      { echo "exporting the base failed: see $out/base.log"; exit 1; }
    how=(--set model.init_from=hf:base --set model.lora.rank=8
         --set 'model.lora.targets=["attn.c_attn", "attn.c_proj", "mlp.c_fc", "mlp.c_proj"]')
  fi
  mpiexec -n 2 "$build/apps/summarize" train --set "model.preset=$preset" --set data.max_tokens=256 \
    --set train.micro_batch=2 --set train.grad_accum=1 --set train.max_steps=4 --set train.warmup_steps=1 \
    --set train.eval_every=0 --set eval.rouge_samples=0 --set train.ckpt_every=0 --set obs.gpu_every_s=0 \
    --set train.best_metric=none "${how[@]}" --set "train.out_dir=$shard" >"$shard.log" 2>&1 ||
    { echo "$shard failed: see $out/$shard.log"; exit 1; }
  plan=$(head -n 1 "$shard/metrics.jsonl" | sed -n 's/.*"memory_plan_mb":\([0-9.]*\).*/\1/p')
  weights=$(head -n 1 "$shard/metrics.jsonl" | sed -n 's/.*"weights_mb":\([0-9.]*\).*/\1/p')
  state=$(sed -n 's/.*AdamW keeps \([0-9.]*\) MB on rank 0.*the plan counted \([0-9.]*\) MB.*/\2 \/ \1/p' \
    "$shard/logs/rank-0.log" | head -n 1)
  loss=$(grep '"ms"' "$shard/metrics.jsonl" | tail -n 1 | sed -n 's/.*"loss":\([0-9.]*\).*/\1/p')
  peak=$(grep '"ms"' "$shard/metrics.jsonl" | tail -n 1 | sed -n 's/.*"peak_mem_mb":\([0-9.]*\).*/\1/p')
  secs=$(grep '"ms"' "$shard/metrics.jsonl" | sed -n '2,4s/.*"ms":\([0-9.]*\).*/\1/p' |
    awk '{s += $1} END {printf "%.1f", s / NR / 1000}')
  awk -v s="$shard" -v p="$plan" -v m="$peak" -v w="$weights" -v o="$state" -v t="$secs" -v l="$loss" \
    'BEGIN {printf "| %s | %.0f | %.0f | %.2f | %.0f | %s | %s | %.4f |\n", s, p, m, p / m, w, o, t, l}'
done
last=checkpoints/step-00000004.h5
rc=0
if [ -d optimizer ]; then
  "$build/tests/compare_runs" models "none/$last" "optimizer/$last" 0 || rc=1
  "$build/tests/compare_runs" optim "none/$last" "optimizer/$last" 0 || rc=1
  "$build/tests/compare_runs" models "none/$last" "gradients/$last" 1e-4 || rc=1
fi
if [ -d masters ]; then
  "$build/tests/compare_runs" models "bf16/$last" "masters/$last" 0 || rc=1
fi
exit $rc
