#!/usr/bin/env bash
# lora.sh SUMMARIZE COMPARE_RUNS MPIEXEC WORK: LoRA (model.lora) as users run it.
#   1. A base: 2 steps of a one-layer model from scratch, exported as a
#      Hugging Face folder.
#   2. Adapters on two of its layers: 2 ranks, dist.shard = "optimizer", an
#      EMA, 4 steps with a checkpoint every 2. Checkpoints and model files hold
#      the adapters alone (model, optimizer and EMA sets) and name the base by
#      its checksum.
#   3. The same run resumed from its checkpoint of step 2: its adapters, EMA
#      and moments end bit for bit as the uninterrupted run's.
#   4. eval and export of the model file: the merged Hugging Face model and
#      PEFT's adapter folder (tests/peers/lora_vs_peft.py checks their
#      numbers against transformers and PEFT). A run in bf16 keeps its base
#      in bf16, and generates its evaluation's summaries in bf16.
#   5. The base changed by one byte: resume and eval stop with status 2,
#      naming the file and both checksums; so do an unknown target, rank 0,
#      and LoRA on a model from scratch, naming the key.
set -uo pipefail
summarize=$1 compare_runs=$2 mpiexec=$3 work=$4
rm -rf "$work" && mkdir -p "$work"
fail() { echo "FAIL: $*"; for f in "$work"/*.log; do echo "--- $f"; tail -20 "$f"; done; exit 1; }
common=(--set data.cache_dir="$work/cache" --set dist.device=cpu --set eval.rouge_samples=0
        --set train.warmup_steps=0)
"$summarize" train "${common[@]}" --set train.out_dir="$work/base-run" --set model.n_layer=1 \
  --set train.max_steps=2 >"$work/base.log" 2>&1 || fail "training the base exited with $?"
"$summarize" export --checkpoint "$work/base-run/models/final_model.h5" --out "$work/base" >>"$work/base.log" 2>&1 ||
  fail "exporting the base exited with $?"

lora=("${common[@]}" --set model.init_from="hf:$work/base" --set 'model.lora.targets=["attn.c_attn", "mlp.c_fc"]'
      --set model.lora.rank=4 --set model.lora.alpha=8 --set train.ema_decay=0.9 --set dist.shard=optimizer
      --set train.ckpt_every=2 --set train.lr=1e-2)
"$mpiexec" -n 2 "$summarize" train "${lora[@]}" --set train.out_dir="$work/whole" --set train.max_steps=4 \
  >"$work/whole.log" 2>&1 || fail "LoRA training exited with $?"
grep -q "frozen base crc64:[0-9a-f]\{16\}: [0-9]* frozen elements (matrices in fp32), 4608 trained" "$work/whole.log" ||
  fail "the log does not say what is frozen and what trains (one layer: 4 x (128 + 384) + 4 x (128 + 512) = 4608 adapter elements)"
/usr/bin/python3 - "$work"/whole/checkpoints/*.h5 "$work"/whole/models/final_model.h5 <<'PY' || fail "a file holds more than the adapters"
import sys, h5py
def text(v): return v.decode() if isinstance(v, bytes) else v
for path in sys.argv[1:]:
    f = h5py.File(path, "r")
    assert text(f.attrs["frozen_base"]).startswith("crc64:"), (path, dict(f.attrs))
    for group in ("model", "ema", "optim"):
        if group not in f:
            assert group != "model" and "checkpoints" not in path, (path, group)
            continue
        names = list(f[group].keys())
        assert names and all(".lora_" in n for n in names), (path, group, names)
print("adapters alone in", len(sys.argv) - 1, "files")
PY

mkdir -p "$work/resumed/checkpoints"
cp "$work/whole/checkpoints/step-00000002.h5" "$work/resumed/checkpoints/" || fail "no checkpoint of step 2"
"$mpiexec" -n 2 "$summarize" train "${lora[@]}" --set train.out_dir="$work/resumed" --set train.max_steps=4 \
  --set train.resume=auto >"$work/resumed.log" 2>&1 || fail "the resumed run exited with $?"
grep -q "resumed from .*step-00000002.h5 at step 2" "$work/resumed.log" || fail "the run did not resume from step 2"
for set in models ema optim; do
  "$compare_runs" "$set" "$work/whole/checkpoints/step-00000004.h5" "$work/resumed/checkpoints/step-00000004.h5" 0 \
    >"$work/compare-$set.log" 2>&1 || fail "resumed $set differ from the uninterrupted run's"
done

model=$work/whole/models/final_model.h5
"$summarize" eval "${common[@]}" --checkpoint "$model" --set train.out_dir="$work/whole" --examples 4 \
  >"$work/eval.log" 2>&1 || fail "eval of the adapters exited with $?"
grep -q "ROUGE on 4 validation examples" "$work/eval.log" || fail "eval did not score"
"$summarize" export --checkpoint "$model" --out "$work/export" >"$work/export.log" 2>&1 || fail "export exited with $?"
for f in config.json model.safetensors adapter/adapter_config.json adapter/adapter_model.safetensors; do
  [ -s "$work/export/$f" ] || fail "export wrote no $f"
done

# In bf16 the frozen matrices are kept in bf16 (as fp16 on a T4), the norms
# in fp32: autocast's products and the norms take them as they are.
# Its evaluation's greedy summaries (eval.rouge_samples) decode in bf16 too.
"$summarize" train "${lora[@]}" --set train.out_dir="$work/bf16" --set train.max_steps=2 \
  --set train.precision=bf16 --set eval.rouge_samples=3 --set gen.max_new_tokens=4 >"$work/bf16.log" 2>&1 ||
  fail "LoRA training in bf16 exited with $?"
grep -q "frozen elements (matrices in bf16)" "$work/bf16.log" || fail "the bf16 run did not keep its base in bf16"
grep -q "ROUGE of 3 greedy summaries" "$work/bf16.log" || fail "the bf16 run did not generate summaries"

cp -r "$work/base" "$work/other-base"
/usr/bin/python3 - "$work/other-base/model.safetensors" <<'PY'  # flip the low bit of the last weight's last byte
import sys
with open(sys.argv[1], "r+b") as f:
    f.seek(-1, 2)
    last = f.read(1)[0]
    f.seek(-1, 2)
    f.write(bytes([last ^ 1]))
PY
expect2() {  # expect2 NAME PATTERN ARGS...: status 2 and PATTERN on stderr
  local name=$1 pattern=$2; shift 2
  "$@" >"$work/$name.log" 2>&1
  local status=$?
  [ $status = 2 ] || fail "$name exited with $status, not 2"
  grep -q -- "$pattern" "$work/$name.log" || fail "$name did not say: $pattern"
}
expect2 eval-other-base "final_model.h5: was trained on the frozen base crc64:[0-9a-f]*, and this run's is crc64:" \
  "$summarize" eval "${common[@]}" --checkpoint "$model" --set model.init_from="hf:$work/other-base"
expect2 resume-other-base "step-00000004.h5: was trained on the frozen base crc64:[0-9a-f]*, and this run's is crc64:" \
  "$summarize" train "${lora[@]}" --set train.out_dir="$work/whole" --set train.max_steps=6 \
  --set model.init_from="hf:$work/other-base" --set dist.shard=none
expect2 unknown-target 'model.lora.targets: unknown layer "c_attn" (GPT-2.s are attn.c_attn' \
  "$summarize" train "${common[@]}" --set model.init_from="hf:$work/base" --set 'model.lora.targets=["c_attn"]'
expect2 rank-zero "model.lora.rank must be >= 1, got 0 (--set)" \
  "$summarize" train "${common[@]}" --set model.init_from="hf:$work/base" --set 'model.lora.targets=["mlp.c_fc"]' \
  --set model.lora.rank=0
expect2 scratch 'model.lora.targets adapts a pretrained GPT-2, and model.init_from is "scratch"' \
  "$summarize" train "${common[@]}" --set 'model.lora.targets=["mlp.c_fc"]'
echo "PASS"
