#!/usr/bin/env bash
# plan.sh SUMMARIZE REPO WORK: `summarize plan` as users run it.
#   1. The jobs' promises: jobs/summarize-xl-*.toml each say what the plan
#      picks on two T4s ("-> M x accumulation A, recompute R, T MB a rank;
#      evaluating E MB"); the command, given GPT-2 XL's config.json alone,
#      says the same. Without its gen.batch, the full fine-tuning's ROUGE
#      generation does not fit beside the sharded state: status 2, naming it.
#   2. The edge: the demo's plan at its own micro-batch fits a card whose
#      budget (90% of its memory less the CUDA context's 512 MiB) is 1 MB
#      over its total (status 0), and not one 1 MB under (status 2, naming
#      what "auto" would take); under "auto" with nothing fitting, the
#      message train gives; "auto" without train.global_batch, refused as
#      train refuses it.
#   3. --shard all plans each setting side by side; sharded masters with
#      dist.shard = "none" are refused in their column, with the key.
#   4. Bad input exits 2 naming the key: an unknown GPU, a count of 0.
#   5. On this machine's CPU the plan is what training plans, and over its
#      first step's measured peak: packed (the default), it plans full
#      sequences of the rows with the most summary, which 8 rows a step do
#      not fill. Training's plan for the shapes that step had is within 15%
#      of the peak (no warning). The first evaluation (its loss and
#      ROUGE's generation) begins with what the plan holds between steps
#      (the gradients gone) and peaks at most at its plan, within 15%.
set -uo pipefail
summarize=$1 repo=$2 work=$3
rm -rf "$work" && mkdir -p "$work/gpt2-xl"
fail() { echo "FAIL: $*"; for f in "$work"/*.log; do echo "--- $f"; tail -30 "$f"; done; exit 1; }
total() { sed -n 's/^| total | \([0-9]*\) |.*/\1/p' "$1"; }

# 1. Only the shape is read from a Hugging Face folder.
cat >"$work/gpt2-xl/config.json" <<'JSON'
{"model_type": "gpt2", "n_ctx": 1024, "n_embd": 1600, "n_head": 25, "n_layer": 48, "n_positions": 1024,
 "vocab_size": 50257, "layer_norm_epsilon": 1e-05, "activation_function": "gelu_new"}
JSON
for job in summarize-xl-lora summarize-xl-full; do
  promise=$(sed -n 's/^#   -> \(.*\)$/\1/p' "$repo/jobs/$job.toml")
  [[ -n $promise ]] || fail "$job.toml has no '#   -> ...' line"
  "$summarize" plan --config "$repo/jobs/$job.toml" --set model.init_from="hf:$work/gpt2-xl" --gpus t4x2 \
    >"$work/$job.log" 2>&1 || fail "$job: plan exited with $?"
  said="$(sed -n 's/^| train.micro_batch | \(.*\) |$/\1/p' "$work/$job.log"), recompute $(sed -n \
    's/^| train.recompute | \(.*\) |$/\1/p' "$work/$job.log"), $(total "$work/$job.log") MB a rank; evaluating $(sed -n \
    's/^| evaluating: total | \([0-9]*\) |$/\1/p' "$work/$job.log") MB"
  [[ $said == "$promise" ]] || fail "$job.toml promises '$promise'; plan says '$said'"
done
"$summarize" plan --config "$repo/jobs/summarize-xl-full.toml" --set model.init_from="hf:$work/gpt2-xl" --gpus t4x2 \
  --set gen.batch=16 >"$work/xl-generation.log" 2>&1
[[ $? == 2 ]] && grep -q "evaluation plans [0-9]* MB per rank (.*greedy generation for eval.rouge_samples, gen.batch = 16" \
  "$work/xl-generation.log" || fail "ROUGE generation at gen.batch 16 beside gpt2-xl's sharded state is not refused"

# 2. The demo (GPT-2 tiny at micro-batch 16) on cards sized about its plan.
"$summarize" plan --gpus 2GiB >"$work/demo.log" 2>&1 || fail "demo plan on 2 GiB exited with $?"
t=$(total "$work/demo.log")
[[ -n $t ]] || fail "no total in the demo's plan"
card() { python3 -c "print(f'{(($1) / 0.9 + 512) / 1024:.6f}GiB')"; }
"$summarize" plan --gpus "$(card "$t + 1")" >"$work/edge-fits.log" 2>&1 || fail "1 MB over the plan exited with $?"
grep -q "| fits in .* | yes, 99% |\|yes, 100% |" "$work/edge-fits.log" || fail "the edge that fits is not said to"
"$summarize" plan --gpus "$(card "$t - 1")" >"$work/edge-over.log" 2>&1
[[ $? == 2 ]] || fail "1 MB under the plan did not exit 2"
grep -q "train.micro_batch = 16 (recompute none) plans $t MB per rank.*\"auto\" with train.global_batch = 16 (this job.s) would take 8" "$work/edge-over.log" ||
  fail "1 MB under the plan does not say what auto would take"
"$summarize" plan --gpus 0.6GiB --set train.micro_batch='"auto"' --set train.recompute='"auto"' --set train.global_batch=16 \
  --set model.n_layer=24 --set model.n_embd=512 --set model.n_head=8 >"$work/auto-none.log" 2>&1
[[ $? == 2 ]] || fail "auto with nothing fitting did not exit 2"
grep -q "does not fit even at micro-batch 1" "$work/auto-none.log" || fail "auto with nothing fitting: no reason"
"$summarize" plan --gpus t4x1 --set train.micro_batch='"auto"' >"$work/auto-unset.log" 2>&1
[[ $? == 2 ]] && grep -q 'train.micro_batch = "auto" splits a rank.s share of train.global_batch, which is not set' \
  "$work/auto-unset.log" || fail "auto without a global batch is not refused"

# 3. Side by side.
"$summarize" plan --gpus t4x2 --shard all --set train.master_weights='"sharded"' --set train.precision='"fp16"' \
  >"$work/all.log" 2>&1 || fail "--shard all exited with $?"
grep -q '^| MB a rank | dist.shard = "none" | dist.shard = "optimizer" | dist.shard = "gradients" |$' "$work/all.log" ||
  fail "--shard all has no column per setting"
grep -q 'dist.shard = "none": train.master_weights = "sharded" keeps the fp32 masters' "$work/all.log" ||
  fail "sharded masters under dist.shard none are not refused in their column"

# 4. Bad input.
"$summarize" plan --gpus p100x2 >"$work/bad-gpu.log" 2>&1
[[ $? == 2 ]] && grep -q 'plan.gpus = "p100x2": no GPU named "p100"; expected NAMExCOUNT (NAME one of t4, ' \
  "$work/bad-gpu.log" || fail "an unknown GPU is not refused naming plan.gpus"
"$summarize" plan --gpus t4x0 >"$work/bad-count.log" 2>&1
[[ $? == 2 ]] && grep -q "the count must be from 1 to 4096" "$work/bad-count.log" || fail "a count of 0 is not refused"

# 5. The plan command against training's own plan and its measured peak.
common=(--set dist.device=cpu --set data.cache_dir="$work/cache" --set train.micro_batch=8 --set eval.rouge_samples=16)
"$summarize" plan --data "${common[@]}" >"$work/cpu-plan.log" 2>&1 || fail "the CPU plan exited with $?"
"$summarize" train "${common[@]}" --set train.max_steps=2 --set train.warmup_steps=0 --set train.eval_every=2 \
  --set train.out_dir="$work/run" >"$work/train.log" 2>&1 ||
  fail "training exited with $?"
planned=$(total "$work/cpu-plan.log")
read -r peak said shapes < <(sed -n \
  "s/.*the first step's peak is \([0-9]*\) MB.*the plan said \([0-9]*\) MB.*, \([0-9]*\) MB for this step's$/\1 \2 \3/p" \
  "$work/train.log")
[[ -n $shapes && $peak -gt 0 ]] || fail "training did not log its peak and its plan for the first step's shapes"
# The log truncates to whole MB, the table rounds.
(( planned - said <= 1 && said - planned <= 1 )) || fail "plan says $planned MB, training planned $said MB"
(( planned >= peak )) || fail "planned $planned MB, measured $peak MB"
python3 -c "import sys; sys.exit(abs($shapes / $peak - 1) > 0.15)" || fail "the step's shapes planned $shapes MB, measured $peak MB"
! grep -q "memory: the plan for the first step's shapes" "$work/train.log" || fail "training warned of its plan"
read -r began between evaluated evaluation < <(sed -n "s/.*the first evaluation began with \([0-9]*\) MB.*between \
steps: \([0-9]*\) MB) and peaked at \([0-9]*\) MB; the plan said \([0-9]*\) MB$/\1 \2 \3 \4/p" "$work/train.log")
[[ -n $evaluation && $evaluated -gt 0 ]] || fail "training did not log its first evaluation's memory and plan"
python3 -c "import sys; sys.exit(abs($began / $between - 1) > 0.05)" ||
  fail "the first evaluation began with $began MB, the plan holds $between MB between steps"
python3 -c "import sys; sys.exit(not 0 <= $evaluation / $evaluated - 1 <= 0.15)" ||
  fail "the evaluation's plan is $evaluation MB, its measured peak $evaluated MB"
! grep -q "memory: the plan for evaluation" "$work/train.log" || fail "training warned of its evaluation's plan"
echo "plan: jobs' promises kept; edge at $t MB; CPU plan $planned MB ($shapes MB for the first step's shapes)" \
  "against a measured peak of $peak MB; evaluation $evaluation MB against $evaluated, begun at $began ($between planned)"
