#!/usr/bin/env bash
# bench_resume_memory.sh BUILD OUT [PRESET]: the host memory a resume takes
# (issue 59). GPT-2 PRESET (default gpt2-medium) from scratch on the built-in
# dialogues, 2 ranks on the CPU, one step and a checkpoint; then that
# checkpoint resumed under each dist.shard with nothing left to train, so
# that each rank's peak resident memory (its process's ru_maxrss) is the
# model, the optimizer and the resume itself. Prints, per setting, each
# rank's peak beside the checkpoint's size; the model's and the moments'
# bytes say what a rank must hold. About 5 minutes and 12 GB for
# gpt2-medium; by hand.
set -uo pipefail
build=$(realpath "$1") out=$2 preset=${3:-gpt2-medium}
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
source "$repo/env/mpi_env.sh"
mkdir -p "$out" && cd "$out" || exit 1
# Each rank under a wrapper that reports its child's peak resident memory.
cat >maxrss.py <<'PY'
import os, resource, subprocess, sys
status = subprocess.run(sys.argv[1:]).returncode
rank = os.environ.get("OMPI_COMM_WORLD_RANK", os.environ.get("PMI_RANK", "0"))
print(f"maxrss rank {rank}: {resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024:.0f} MB", file=sys.stderr)
sys.exit(status)
PY
job=(--set "model.preset=$preset" --set data.max_tokens=256 --set train.micro_batch=2 --set train.grad_accum=1
  --set train.max_steps=1 --set train.warmup_steps=0 --set train.eval_every=0 --set eval.rouge_samples=0
  --set obs.gpu_every_s=0 --set train.best_metric=none --set train.ckpt_every=1)
rm -rf run
mpiexec -n 2 "$build/apps/summarize" train "${job[@]}" --set train.out_dir=run >train.log 2>&1 ||
  { echo "training failed: see $out/train.log"; exit 1; }
ckpt=run/checkpoints/step-00000001.h5
printf 'checkpoint %s: %.0f MB\n\n' "$ckpt" "$(($(stat -c %s "$ckpt") / 1048576))"
printf '| dist.shard | rank 0 peak MB | rank 1 peak MB |\n|---|---|---|\n'
for shard in ${SETTINGS:-none optimizer gradients}; do
  rm -rf "resume-$shard" && mkdir -p "resume-$shard/checkpoints" && cp "$ckpt" "resume-$shard/checkpoints/"
  cp run/config.toml "resume-$shard/"
  mpiexec -n 2 python3 maxrss.py "$build/apps/summarize" train "${job[@]}" --set "dist.shard=$shard" \
    --set "train.out_dir=resume-$shard" >"resume-$shard.log" 2>&1 ||
    { echo "resuming under $shard failed: see $out/resume-$shard.log"; exit 1; }
  grep -q "resumed from" "resume-$shard.log" || { echo "$shard did not resume: see $out/resume-$shard.log"; exit 1; }
  r0=$(sed -n 's/^maxrss rank 0: \([0-9]*\) MB/\1/p' "resume-$shard.log")
  r1=$(sed -n 's/^maxrss rank 1: \([0-9]*\) MB/\1/p' "resume-$shard.log")
  printf '| %s | %s | %s |\n' "$shard" "$r0" "$r1"
done
