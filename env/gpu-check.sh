#!/usr/bin/env bash
# Does tandem work on this GPU node? A self-check in about ten minutes, in the
# spirit of `accelerate test` and nccl-tests, over the paths a training run
# takes. It builds only what it runs (every core), prints one table, and
# writes gpu-check.json to the current folder.
#
#   env/gpu-check.sh [--quick] [--only NAME[,NAME...]] [--bundle DIR]
#     --quick       fewer steps everywhere: a quick look, not a verdict
#     --only NAME   run only these checks (and the CPU references they need)
#     --bundle DIR  no network here: build and run with the offline bundle DIR
# Environment: TANDEM_BUILD (build folder, default build/).
#
# Checks (NAME: what passes):
#   cpu-envcheck         envcheck --test on 2 ranks over MPI on the CPU
#   cpu-reference-APP    the APP's tiny job on the CPU in fp32, the losses the
#                        GPU runs are compared with
#   unit-gpu             the unit tests, GPU ones included, all pass
#   nccl-envcheck        envcheck --test with NCCL, one rank per GPU
#   collectives-layouts  the NCCL and collective-contract tests (dense,
#                        channels-last and sliced tensors), one rank per GPU
#   tiny-APP-PREC        the APP's tiny job on the GPU in PREC (fp32 with TF32
#                        off, fp16 with loss scaling, bf16 from compute
#                        capability 8.0), its losses within the stated
#                        tolerance of the CPU's (below)
#   mpi-shared-gpu       2 ranks on one GPU over the MPI backend: GradSync's
#                        hooks, pinned staging and autocast under CUDA
#   generate-greedy      greedy summaries on the GPU equal the CPU's
#   gpt2-124m            GPT-2 124M at full size on one GPU: ms/step, tokens/s,
#                        MFU, peak memory, sync wait
# Without a GPU only the CPU half runs; every GPU check says "skipped: no GPU"
# and the exit status is 0. Exit status 1 when a check failed, 2 on bad options.
#
# Loss tolerances, relative, against the CPU's fp32 run of the same steps:
#   PREC  first step  mean of the last 5
#   fp32  1e-4        1e-3   TF32 off: both sides round to 2^-24; what differs
#                            is the order of the sums (cuBLAS tiles, MKL
#                            blocks), ~1e-6 a loss, grown through 20 Adam steps
#   fp16  1e-2        5e-2   inputs and products rounded to 2^-11 (u = 4.9e-4)
#                            through a dozen layers; the scaler skips its first
#                            overflowing steps, so the path drifts more later
#   bf16  2e-2        5e-2   u = 2^-8 = 3.9e-3, fp32 accumulation
set -uo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
die() { echo "env/gpu-check.sh: $*" >&2; exit 2; }

apps=(summarize carotid vavae)
precs=(fp32 fp16 bf16)
all_checks=(cpu-envcheck cpu-reference-summarize cpu-reference-carotid cpu-reference-vavae unit-gpu nccl-envcheck
  collectives-layouts)
for a in "${apps[@]}"; do for p in "${precs[@]}"; do all_checks+=("tiny-$a-$p"); done; done
all_checks+=(mpi-shared-gpu generate-greedy gpt2-124m)

quick=0 bundle='' only=()
while [ $# -gt 0 ]; do
  case $1 in
    --quick) quick=1 ;;
    --only) [ $# -ge 2 ] || die "--only needs a check name"; IFS=, read -ra more <<<"$2"; only+=("${more[@]}"); shift ;;
    --bundle) [ $# -ge 2 ] || die "--bundle needs a folder"; bundle=$2; shift ;;
    -h | --help) sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown option '$1' (have: --quick, --only NAME, --bundle DIR)" ;;
  esac
  shift
done
for n in "${only[@]}"; do
  [[ " ${all_checks[*]} " == *" $n "* ]] || die "--only $n: no such check (have: ${all_checks[*]})"
done
if [ -n "$bundle" ]; then
  source "$repo/env/bundle_env.sh"
  tandem_bundle_check "$bundle" env/gpu-check.sh
  bundle=$(cd "$bundle" && pwd)
fi
source "$repo/env/mpi_env.sh"
source "$repo/env/python.sh"
build=${TANDEM_BUILD:-$repo/build}
case $build in /*) ;; *) build=$repo/$build ;; esac
steps=$((quick ? 8 : 20))
work=$(mktemp -d "${TMPDIR:-/tmp}/tandem-gpu-check.XXXXXX")
started=$(date +%s)

# --- results ---------------------------------------------------------------------
names=() statuses=() reasons=() figures=()
record() { # record NAME passed|FAILED|skipped REASON [FIGURES]
  names+=("$1") statuses+=("$2") reasons+=("$3") figures+=("${4:-}")
  printf 'gpu-check: %-24s %s%s\n' "$1" "$2" "${3:+: $3}"
}
wanted() { [ ${#only[@]} -eq 0 ] || [[ " ${only[*]} " == *" $1 "* ]]; }
# wanted_prefix P: some wanted check starts with P (a CPU reference serves them).
wanted_prefix() {
  [ ${#only[@]} -eq 0 ] && return 0
  local n
  for n in "${only[@]}"; do [[ $n == "$1"* ]] && return 0; done
  return 1
}

# run_logged NAME SECONDS CMD...: runs CMD with a time limit, its output in
# WORK/NAME.log; prints why it failed, nothing when it passed.
run_logged() {
  local name=$1 limit=$2
  shift 2
  timeout -k 10 "$limit" bash -c '"$@"' gpu-check "$@" >"$work/$name.log" 2>&1
  local status=$?
  if [ $status -eq 124 ] || [ $status -eq 137 ]; then echo "timed out after $limit s (log: $work/$name.log)"
  elif [ $status -ne 0 ]; then echo "exit status $status: $(grep -m1 -iE 'error|fail' "$work/$name.log" | cut -c1-160) (log: $work/$name.log)"
  fi
}
prog() { # prog NAME ARGS...: a tandem program, through the bundle's launcher with one
  local p=$build/apps/$1
  shift
  if [ -n "$bundle" ]; then "$bundle/bin/bundle-run" "$p" "$@"; else "$p" "$@"; fi
}
mpi() { ${bundle:+"$bundle/bin/"}mpirun --bind-to none "$@"; }
export -f prog mpi  # run_logged runs them under timeout, in a child bash
export build bundle

# --- this machine ----------------------------------------------------------------
gpus=0 cc_major=0 gpu_names=''
if command -v nvidia-smi >/dev/null 2>&1; then
  gpu_names=$(nvidia-smi --query-gpu=name,compute_cap,memory.total --format=csv,noheader 2>/dev/null | grep -v '^$')
  gpus=$(grep -c . <<<"$gpu_names")
  cc_major=$(head -n 1 <<<"$gpu_names" | awk -F', ' '{split($2, v, "."); print v[1] + 0}')
fi
if [ -n "${CUDA_VISIBLE_DEVICES+x}" ]; then
  IFS=, read -ra visible <<<"$CUDA_VISIBLE_DEVICES"
  [ "${visible[0]:-}" = -1 ] && visible=()
  [ ${#visible[@]} -lt "$gpus" ] && gpus=${#visible[@]}
fi
echo "gpu-check: $gpus GPU(s)${gpu_names:+: $(head -n 1 <<<"$gpu_names")}; work folder $work"
[ "$gpus" -gt 0 ] || echo "gpu-check: no GPU here: the CPU half only"

# --- build: only what runs ----------------------------------------------------------
targets=(summarize envcheck)
wanted_prefix cpu-reference-carotid || wanted_prefix tiny-carotid && targets+=(carotid)
wanted_prefix cpu-reference-vavae || wanted_prefix tiny-vavae && targets+=(vavae)
if [ "$gpus" -gt 0 ]; then
  wanted unit-gpu && targets+=(unit_tests)
  wanted collectives-layouts && targets+=(mpi_tests)
fi
# Carotid's and vavae's small image sets come from Fashion-MNIST through the
# tests' fixture (Debian's dataset-fashion-mnist).
fashion=/usr/share/datasets/fashion-mnist
[ -d "$fashion" ] && [[ " ${targets[*]} " == *" carotid "* || " ${targets[*]} " == *" vavae "* ]] &&
  targets+=(vavae_fashion_mnist_split)
build_args=()
for t in "${targets[@]}"; do build_args+=(--target "$t"); done
if [ -n "$bundle" ]; then
  # Tests' discovery runs the test binaries, which load the bundle's libraries.
  build_cmd=("$bundle/bin/bundle-run" "$repo/env/build.sh" --bundle "$bundle" -DBUILD_TESTING=ON)
else
  build_cmd=("$repo/env/build.sh")
fi
why=$(TANDEM_BUILD=$build run_logged build 1800 "${build_cmd[@]}" "${build_args[@]}")
if [ -n "$why" ]; then
  echo "gpu-check: the build failed: $why" >&2
  tail -n 30 "$work/build.log" >&2
  exit 1
fi
echo "gpu-check: built ${targets[*]} in $(($(date +%s) - started)) s"

# --- the tiny jobs -------------------------------------------------------------------
# Image sets for carotid (two Fashion-MNIST classes as labels, 3 images a
# person) and vavae (four classes as users), made once; empty when impossible.
image_data=''
make_image_data() {
  [ -n "$image_data" ] && return
  if [ ! -d "$fashion" ] || [ ! -x "$build/tests/vavae_fashion_mnist_split" ]; then
    image_data=none
    return
  fi
  if "$TANDEM_PYTHON" "$repo/tests/kaggle/make_data.py" "$build/tests/vavae_fashion_mnist_split" "$fashion" \
    "$work/data" >"$work/data.log" 2>&1; then image_data=$work/data; else image_data=none; fi
}
no_data_reason="no image data: needs Debian's Fashion-MNIST ($fashion, apt-get install dataset-fashion-mnist) and the tests' fixture"

# tiny_job APP DEVICE PREC OUT: the APP's tiny job for $steps steps; prints why
# it failed, nothing when it ran. Its metrics.jsonl is echoed by metrics_of.
tiny_job() {
  local app=$1 device=$2 prec=$3 out=$4
  local args=(--set "dist.device=$device" --set "train.precision=$prec")
  [ "$prec" = fp32 ] && args+=(--set dist.tf32=false)
  rm -rf "$out"
  case $app in
    summarize)
      run_logged "$(basename "$out")" 300 prog summarize train --config "$repo/jobs/summarize-tiny.toml" "${args[@]}" \
        --set train.max_steps="$steps" --set train.warmup_steps=1 --set train.out_dir="$out" \
        --set data.cache_dir="$work/token-cache" ;;
    carotid)
      run_logged "$(basename "$out")" 300 prog carotid --config "$repo/jobs/carotid-tiny.toml" "${args[@]}" \
        --set train.max_steps="$steps" --root-dir "$image_data/carotid/images" \
        --label-excel "$image_data/carotid/labels.csv" --run-dir "$out" ;;
    vavae)
      run_logged "$(basename "$out")" 300 prog vavae train-vae --config "$repo/jobs/vavae-tiny.toml" "${args[@]}" \
        --set vae.max_steps="$steps" --data-root "$image_data/vavae/data_split" --run-dir "$out" ;;
  esac
}
metrics_of() { # metrics_of APP OUT: the run's metrics.jsonl
  case $1 in vavae) echo "$2/vae/metrics.jsonl" ;; *) echo "$2/metrics.jsonl" ;; esac
}

# compare_losses CPU.jsonl GPU.jsonl PREC: "ok FIGURE" or the reason it failed.
compare_losses() {
  "$TANDEM_PYTHON" - "$@" <<'PY'
import json, sys
cpu_path, gpu_path, prec = sys.argv[1:]
tol = {"fp32": (1e-4, 1e-3), "fp16": (1e-2, 5e-2), "bf16": (2e-2, 5e-2)}[prec]
def losses(path):
    rows = [json.loads(l) for l in open(path) if l.strip()]
    return {r["step"]: r["loss"] for r in rows if "loss" in r and "step" in r}
cpu, gpu = losses(cpu_path), losses(gpu_path)
steps = sorted(set(cpu) & set(gpu))
if len(steps) < 2 or len(steps) != len(cpu):
    sys.exit(print(f"the runs logged different steps (cpu {len(cpu)}, gpu {len(gpu)})") or 0)
rel = lambda a, b: abs(a - b) / max(abs(b), 1e-12)
first = rel(gpu[steps[0]], cpu[steps[0]])
tail = steps[-5:]
mean = lambda d: sum(d[s] for s in tail) / len(tail)
last = rel(mean(gpu), mean(cpu))
figure = f"first {first:.1e}, last-5 mean {last:.1e}"
if first > tol[0] or last > tol[1]:
    print(f"losses differ from the CPU's beyond {tol[0]:g} / {tol[1]:g}: {figure}")
else:
    print(f"ok {figure}")
PY
}

# --- the CPU half --------------------------------------------------------------------
if wanted cpu-envcheck; then
  why=$(run_logged cpu-envcheck 300 mpi -np 2 "$build/apps/envcheck" --test --set dist.device=cpu \
    --set envcheck.max_mb=4 --set envcheck.iters=3)
  if [ -z "$why" ]; then record cpu-envcheck passed ""; else record cpu-envcheck FAILED "$why"; fi
fi
for app in "${apps[@]}"; do
  wanted_prefix "cpu-reference-$app" || wanted_prefix "tiny-$app" || continue
  if [ "$app" != summarize ]; then make_image_data; fi
  if [ "$app" != summarize ] && [ "$image_data" = none ]; then
    record "cpu-reference-$app" skipped "$no_data_reason"
    continue
  fi
  why=$(tiny_job "$app" cpu fp32 "$work/cpu-$app")
  [ -n "$why" ] || [ "$(grep -c '"loss"' "$(metrics_of "$app" "$work/cpu-$app")" 2>/dev/null)" -ge "$steps" ] ||
    why="it logged fewer than $steps losses (log: $work/cpu-$app.log)"
  if [ -n "$why" ]; then record "cpu-reference-$app" FAILED "$why"; continue; fi
  record "cpu-reference-$app" passed "" "$steps steps"
done

# --- the GPU half --------------------------------------------------------------------
gpu_check() { # gpu_check NAME: false (and "skipped") when it cannot run here
  wanted "$1" || return 1
  if [ "$gpus" -eq 0 ]; then record "$1" skipped "no GPU"; return 1; fi
}
if gpu_check unit-gpu; then
  why=$(run_logged unit-gpu 600 prog ../tests/unit_tests --gtest_brief=1)
  skipped=$(grep -c '\[  SKIPPED \]' "$work/unit-gpu.log")
  if [ -z "$why" ]; then record unit-gpu passed "" "$skipped skipped"; else record unit-gpu FAILED "$why"; fi
fi
if gpu_check nccl-envcheck; then
  why=$(run_logged nccl-envcheck 300 mpi -np "$gpus" "$build/apps/envcheck" --test --set dist.backend=nccl \
    --set envcheck.max_mb=64)
  busbw=$(grep -m1 'average busbw' "$work/nccl-envcheck.log" | sed 's/.*busbw: //')
  if [ -z "$why" ]; then record nccl-envcheck passed "" "$gpus rank(s), busbw $busbw"; else record nccl-envcheck FAILED "$why"; fi
fi
if gpu_check collectives-layouts; then
  why=$(run_logged collectives-layouts 300 mpi -np "$gpus" "$build/tests/mpi_tests" '--gtest_filter=Nccl*:Contract*:*/Contract*')
  if [ -z "$why" ] && grep -q '\[  SKIPPED \]' "$work/collectives-layouts.log"; then
    why="a test skipped on a GPU node: $(grep -m1 -A1 'SKIPPED\|Skipped' "$work/collectives-layouts.log" | tr '\n' ' ')"
  fi
  if [ -z "$why" ]; then record collectives-layouts passed "" "$gpus rank(s)"; else record collectives-layouts FAILED "$why"; fi
fi
for app in "${apps[@]}"; do
  for prec in "${precs[@]}"; do
    name=tiny-$app-$prec
    gpu_check "$name" || continue
    if [ "$prec" = bf16 ] && [ "$cc_major" -lt 8 ]; then record "$name" skipped "bf16 needs compute capability 8.0"; continue; fi
    if [ ! -f "$(metrics_of "$app" "$work/cpu-$app")" ]; then record "$name" skipped "no CPU reference (cpu-reference-$app)"; continue; fi
    why=$(tiny_job "$app" cuda "$prec" "$work/gpu-$app-$prec")
    if [ -n "$why" ]; then record "$name" FAILED "$why"; continue; fi
    verdict=$(compare_losses "$(metrics_of "$app" "$work/cpu-$app")" "$(metrics_of "$app" "$work/gpu-$app-$prec")" "$prec")
    if [[ $verdict == ok* ]]; then record "$name" passed "" "${verdict#ok }"; else record "$name" FAILED "$verdict"; fi
  done
done
if gpu_check mpi-shared-gpu; then
  why=$(run_logged mpi-shared-gpu 300 mpi -np 2 "$build/apps/summarize" train --config "$repo/jobs/summarize-tiny.toml" \
    --set dist.backend=mpi --set dist.device=cuda --set train.max_steps=5 --set train.warmup_steps=1 \
    --set train.out_dir="$work/shared-gpu" --set data.cache_dir="$work/token-cache")
  [ -z "$why" ] && ! grep -q 'training on 2 rank(s), cuda' "$work/mpi-shared-gpu.log" &&
    why="the log does not say it trained on 2 ranks on cuda"
  if [ -z "$why" ]; then record mpi-shared-gpu passed "" "2 ranks, 1 GPU"; else record mpi-shared-gpu FAILED "$why"; fi
fi
# Greedy decoding is argmax after argmax: in fp32 with TF32 off the GPU's
# logits differ from the CPU's in the last bits, which flips a token only at a
# near-tie. All summaries must match, bar one in twenty for such ties.
if gpu_check generate-greedy; then
  model=$work/cpu-summarize/models/final_model.h5
  if [ ! -f "$model" ]; then
    record generate-greedy skipped "no CPU reference model (cpu-reference-summarize)"
  else
    for device in cpu cuda; do
      why=$(run_logged "generate-$device" 300 prog summarize predict --config "$repo/jobs/summarize-tiny.toml" \
        --checkpoint "$model" --set dist.device="$device" --set dist.inference_fp32=true --set dist.tf32=false \
        --set gen.max_new_tokens=16 --set train.out_dir="$work/generate-$device" --set data.cache_dir="$work/token-cache")
      [ -z "$why" ] || break
    done
    if [ -n "$why" ]; then record generate-greedy FAILED "$why"
    else
      differ=$(paste -d'\n' "$work/generate-cpu/submission.csv" "$work/generate-cuda/submission.csv" |
        awk 'NR % 2 { a = $0; next } a != $0 { n++ } END { print n + 0 }')
      rows=$(($(wc -l <"$work/generate-cpu/submission.csv") - 1))
      if [ "$differ" -le $((rows / 20)) ]; then record generate-greedy passed "" "$differ of $rows summaries differ"
      else record generate-greedy FAILED "$differ of $rows summaries differ from the CPU's"; fi
    fi
  fi
fi
if gpu_check gpt2-124m; then
  n=$((quick ? 12 : 30))
  why=$(run_logged gpt2-124m 400 prog summarize train --config "$repo/jobs/summarize-tiny.toml" \
    --set model.preset=gpt2 --set train.micro_batch=16 --set train.max_steps=$n --set train.warmup_steps=2 \
    --set train.eval_every=0 --set train.ckpt_every=0 --set train.precision=auto \
    --set train.out_dir="$work/gpt2-124m" --set data.cache_dir="$work/token-cache")
  if [ -n "$why" ]; then record gpt2-124m FAILED "$why"
  else
    # Medians after the first 5 steps (allocator and cuBLAS warm-up).
    fig=$("$TANDEM_PYTHON" - "$work/gpt2-124m/metrics.jsonl" <<'PY'
import json, statistics, sys
rows = [r for r in map(json.loads, open(sys.argv[1])) if r.get("step", 0) > 5 and "ms" in r]
def med(key, form):  # n/a: not logged (no MFU for an unknown GPU, no sync wait on one rank)
    return format(statistics.median(r[key] for r in rows), form) if rows and key in rows[0] else "n/a"
print(f"{med('ms', '.0f')} ms/step, {med('tokens_per_s', '.0f')} tokens/s, MFU {med('mfu', '.3f')}, "
      f"peak {med('peak_mem_mb', '.0f')} MB, sync wait {med('sync_wait_ms', '.1f')} ms")
PY
)
    record gpt2-124m passed "" "$fig"
  fi
fi

# --- the table and gpu-check.json ----------------------------------------------------
echo
printf '%-24s %-8s %s\n' CHECK RESULT "DETAILS"
failed=0
for i in "${!names[@]}"; do
  detail=${reasons[$i]:-${figures[$i]}}
  printf '%-24s %-8s %s\n' "${names[$i]}" "${statuses[$i]}" "$detail"
  [ "${statuses[$i]}" = FAILED ] && failed=1
done
elapsed=$(($(date +%s) - started))
echo "($elapsed s)"
{
  for i in "${!names[@]}"; do printf '%s\t%s\t%s\t%s\n' "${names[$i]}" "${statuses[$i]}" "${reasons[$i]}" "${figures[$i]}"; done
} | "$TANDEM_PYTHON" -c '
import json, subprocess, sys
checks = [dict(zip(["name", "status", "reason", "figures"], l.rstrip("\n").split("\t"))) for l in sys.stdin]
def out(*cmd):
    try: return subprocess.run(cmd, capture_output=True, text=True).stdout.strip()
    except OSError: return ""
try:
    import torch; tv = torch.__version__
except Exception: tv = ""
json.dump({"gpus": [g for g in sys.argv[1].split("\n") if g], "torch": tv, "tandem": out("git", "-C", sys.argv[2], "rev-parse", "HEAD"),
           "seconds": int(sys.argv[3]), "checks": checks}, open("gpu-check.json", "w"), indent=1)
' "$gpu_names" "$repo" "$elapsed"
if [ $failed -eq 0 ]; then rm -rf "$work"; echo "gpu-check.json written; nothing failed"
else echo "gpu-check.json written; a check FAILED: send the table, gpu-check.json and $work/*.log"; fi
exit $failed
