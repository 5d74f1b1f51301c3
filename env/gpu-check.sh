#!/usr/bin/env bash
# Is this node ready to train with tandem on its NVIDIA GPUs? A self-check in
# the spirit of `accelerate test` and nccl-tests, over the paths a training run
# takes, in at most ten minutes on a 16-core node with one H100, building
# included. It builds only what it runs (every core), runs each check under a
# time limit, prints one table and writes gpu-check.json to the current folder.
#
#   env/gpu-check.sh [--quick] [--only NAME[,NAME...]] [--bundle DIR]
#     --quick       fewer steps everywhere: a quick look, not a verdict
#     --only NAME   only these checks (repeatable), and the CPU references
#                   their comparisons need
#     --bundle DIR  no network here: build with the offline bundle DIR
#                   (env/build.sh --bundle) and run through DIR/bin/bundle-run
#                   and DIR/bin/mpirun; made with env/bundle.sh DIR
#                   --with-tests, or the checks that need test programs are
#                   skipped, saying so
# Environment: TANDEM_BUILD, the build folder (default build/, relative to the
# repository, as for env/build.sh); CUDA_VISIBLE_DEVICES is honoured.
#
# Checks (NAME: what passes):
#   cpu-envcheck             envcheck --test on 2 ranks over MPI on the CPU
#   cpu-reference-APP        APP's tiny job, N steps on the CPU in fp32: the
#                            losses tiny-APP-* are compared with (APP: each
#                            app of apps/CMakeLists.txt with a jobs/APP-tiny.toml)
#   unit-gpu                 the unit tests pass, and none of the GPU ones skips
#   nccl-envcheck            envcheck --test over NCCL, one rank per GPU
#   collectives-layouts      mpi_tests' Nccl* tests, one rank per GPU: dense,
#                            channels-last (4-D, 5-D) and refused strided
#                            tensors on NCCL and on MPI with CUDA tensors
#   contract-nccl            the collective contract's cases (ctest -L
#                            contract) on NCCL, one rank on one GPU: the MPI
#                            backend's own cases, every refusal included,
#                            none skipped
#   tiny-APP-PREC            APP's tiny job on one GPU in PREC, its losses within
#                            the tolerance below of the CPU's (tf32: fp32
#                            with TF32 matmuls, compute capability 8.0 and up)
#   mpi-shared-gpu           2 ranks on one GPU over the MPI backend: GradSync's
#                            hooks, the pinned staging and autocast under CUDA
#   shard-shared-gpu         2 ranks on one GPU over MPI, fp32 (TF32 off), the
#                            tiny summarize job under each dist.shard:
#                            "optimizer" logs the losses of "none" to the last
#                            digit, "gradients" within 1e-5 (ZeRO-1 and -2's
#                            narrow AdamW runs, post-accumulate hooks under
#                            CUDA); each also stopped after 2 steps and
#                            resumed, its losses the uninterrupted run's
#   shard-nccl               the same over NCCL, one rank per GPU (a node with
#                            two GPUs or more; skipped on one)
#   loop-faults              the training loop's fault paths under CUDA, with
#                            toy_train's injected faults (a test program):
#                            fp16 losses NaN from forward pass 8 end the run
#                            with 1 after train.max_bad_steps = 3 skipped
#                            steps, the step-5 checkpoint kept; out of memory
#                            on rank 1 of 2 on one GPU (MPI) in step 3: the
#                            step is dropped and run again at micro-batch 2,
#                            and the model is a run's that switched to
#                            micro-batch 2 there (within 1e-6)
#   fp16-overflow            a curable overflow: toy_train's loss times 2^11
#                            in fp16 overflows at the initial loss scale; the
#                            scaler skips steps and lowers the scale until it
#                            fits, the run ends well, and each step's loss is
#                            its CPU twin's (fp16's tolerance)
#   sampling-gpu             top-k, top-p and temperature sampling on the GPU:
#                            each token drawn as often as its probability says
#                            (40,000 draws), none outside the kept set, and a
#                            seed's draws the same run to run
#   carotid-shared-gpu       carotid's Trainer as 2 ranks on one GPU over MPI:
#                            channels-last weights, BatchNorm buffers, GradSync
#                            and evaluation on CUDA tensors
#   vavae-pipeline           vavae `complete`, shortened, as 2 ranks on one GPU
#                            over MPI in fp16: the VAE with the VF loss, extract,
#                            the DiT, sample and evaluate on the GPU; every file
#                            written, every loss finite
#   oom-scarce               GPT-2 124M at micro-batch 16 with the allocator held
#                            (per_process_memory_fraction) between the peaks of
#                            16 and 8: it backs off to 8 and its losses are a
#                            run's at 8 with 2 accumulated (fp32's tolerance)
#   lora-fp16                the tiny summarize job's LoRA adapters on one GPU
#                            over a base kept in fp16 (as a T4 keeps
#                            gpt2-xl's), losses within fp16's tolerance of
#                            the same run's on the CPU in fp32, ROUGE
#                            summaries decoded over the half base, and the
#                            merged and PEFT exports written
#   generate-greedy          greedy summaries on the GPU equal the CPU's exactly
#   rouge-training           the ROUGE training evaluates on the GPU equals
#                            `summarize eval`'s of its best model, to the bit
#   inference-precision      the tiny summarize job trained on the GPU in fp32
#                            and in fp16; generate runs each in the precision
#                            it was trained in under train.precision = auto,
#                            in the command's own when it names one, and in
#                            fp32 under dist.inference_fp32 (the log's
#                            "inference on cuda:N: ..." line)
#   packed-gpu               the tiny summarize job on the GPU in fp32 (TF32
#                            off), 16 rows a step as one micro-batch and as
#                            data.batching = "packed" (2 sequences a
#                            micro-batch): attention a row at a time on
#                            CUDA (nn/packed_rows.h), the same losses within
#                            fp32's tolerance, and less padding
#   optimizer-8bit           GPT-2 124M, 12 steps with AdamW's moments in
#                            fp32 and in 8 bits (train.optimizer_state; the
#                            quantisation's tensor-op path, which only a GPU
#                            runs): losses within 2% of fp32's, ms a step
#   master-weights           the same, one rank in fp16 under dist.shard =
#                            "gradients": replicated weights, sharded masters
#                            (train.master_weights) and with 8-bit moments:
#                            losses within 2%, ms a step
#   gpt2-124m                GPT-2 124M on one GPU: ms/step, tokens/s, MFU,
#                            peak memory (medians after the warm-up steps)
#   torch-baseline           a plain PyTorch GPT-2 124M step beside it
#                            (tests/bench/torch_gpt2_step.py: this machine's
#                            torch, bf16 autocast, SDPA, fused AdamW, full
#                            context): ms/step, tokens/s, achieved TFLOP/s
#   memory-plan              the memory plan against the measured peak
#                            (max_memory_allocated) of the tiny jobs and
#                            GPT-2 124M above, within 15%
# With two GPUs or more, nccl-envcheck and collectives-layouts run one rank
# per GPU (NCCL between ranks) and shard-nccl runs. Not yet checked on any
# GPU: a rank stopped mid-collective over NCCL (the watchdog's abort, every
# later call refused, nothing written: unit-tested with fake works only) and
# the clean exit's ncclCommDestroy under its deadline, which need two GPUs;
# evaluation's prefetch timed; GPT-2 124M with the head on every position
# (summarize trains its summary head only; torch-baseline runs the full one).
# With --bundle the test programs are built from the bundle's GoogleTest
# (env/bundle.sh --with-tests).
# APP is summarize, carotid or vavae; PREC fp32 (TF32 off), tf32, fp16 (loss
# scaling) or bf16 (tf32 and bf16: compute capability 8.0 and up). Without a GPU only the CPU
# half runs (the build, cpu-envcheck, the CPU references), every GPU check says
# "skipped: no GPU" and the exit status is 0. Exit status 1: a check failed
# (the work folder is kept); 2: bad options.
#
# Loss tolerances, relative, GPU against the CPU's fp32 run of the same steps
# (same seed, weights made on the CPU, same batches). u is the unit roundoff.
#   fp32, TF32 off  every step 1e-3. Both sides round to u = 2^-24 = 6e-8; what
#                   differs is the order of the sums (cuBLAS/cuDNN tiles, MKL/
#                   oneDNN blocks), ~sqrt(n) u ~ 1e-6 a loss at step 1, which
#                   Adam's normalised updates amplify step after step: 1e-3
#                   leaves ~10x room over that growth in 20 steps while a real
#                   kernel error (a wrong reduction, a lost term) moves the
#                   loss by far more.
#   fp16, scaled    first step 1e-2, every step 6e-2. Products and
#                   activations round to u = 2^-11 = 4.9e-4 with fp32
#                   accumulation; over a dozen layers the logits carry ~10-20 u,
#                   so the first loss ~1e-2; the updates then follow fp16
#                   gradients, and the path drifts by a few 1e-2 in 20 steps.
#                   Each step is compared, not the mean of the losses, where
#                   errors of opposite sign would cancel.
#   bf16            first step 2e-2, every step 1.2e-1: u = 2^-8 = 3.9e-3, 8x
#                   fp16's, on the same reasoning (fp32 accumulation keeps it
#                   from growing 8x).
#   tf32            as fp16: TF32 rounds each matmul's inputs to u = 2^-11,
#                   fp16's, and accumulates in fp32; activations stay fp32,
#                   so it is fp16's bound with room to spare.
# A step whose update the loss scaler skipped (fp16 overflow) leaves the GPU
# one update behind: each GPU step is compared with the CPU step that had as
# many updates before it, and the runs use a constant learning rate, so a
# skipped step shifts the schedule of neither.
# shellcheck disable=SC2317,SC2034  # functions run in run_check's child shells; missing_APP is read as ${!missing}
set -uo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
die() { echo "env/gpu-check.sh: $*" >&2; exit 2; }

# The apps with a tiny job (jobs/APP-tiny.toml), in apps/CMakeLists.txt's order;
# tiny_job below says how each runs.
apps=()
mapfile -t names < <(bash -c 'source "$1" && launch_app_names' _ "$repo/env/launch_lib.sh")
for a in "${names[@]}"; do [ -f "$repo/jobs/$a-tiny.toml" ] && apps+=("$a"); done
precs=(fp32 tf32 fp16 bf16)
checks=(cpu-envcheck)
for a in "${apps[@]}"; do checks+=("cpu-reference-$a"); done
checks+=(unit-gpu nccl-envcheck collectives-layouts contract-nccl)
for a in "${apps[@]}"; do for p in "${precs[@]}"; do checks+=("tiny-$a-$p"); done; done
checks+=(loop-faults fp16-overflow sampling-gpu mpi-shared-gpu carotid-shared-gpu vavae-pipeline shard-shared-gpu
  shard-nccl oom-scarce lora-fp16 generate-greedy rouge-training inference-precision packed-gpu optimizer-8bit
  master-weights gpt2-124m torch-baseline memory-plan)

quick=0 bundle='' only=()
while [ $# -gt 0 ]; do
  case $1 in
    --quick) quick=1 ;;
    --only) [ $# -ge 2 ] || die "--only needs a check name"; IFS=, read -ra more <<<"$2"; only+=("${more[@]}"); shift ;;
    --bundle) [ $# -ge 2 ] || die "--bundle needs the bundle's folder"; bundle=$2; shift ;;
    -h | --help) sed -n '2,/^# shellcheck/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown option '$1' (-h for help)" ;;
  esac
  shift
done
for n in "${only[@]}"; do
  [[ " ${checks[*]} " == *" $n "* ]] || die "--only $n: no such check; the checks are: ${checks[*]}"
done
if [ -n "$bundle" ]; then
  source "$repo/env/bundle_env.sh"
  tandem_bundle_open "$bundle" gpu-check
  bundle=$TANDEM_BUNDLE_DIR
fi
source "$repo/env/mpi_env.sh"  # Open MPI as root, oversubscription
source "$repo/env/python.sh"   # TANDEM_PYTHON: stdlib only here (JSON, loss figures)
build=${TANDEM_BUILD:-build}
case $build in /*) ;; *) build=$repo/$build ;; esac
steps=$((quick ? 5 : 20))
work=$(mktemp -d "${TMPDIR:-/tmp}/tandem-gpu-check.XXXXXX")
started=$SECONDS
trap 'echo "gpu-check: interrupted; the logs so far are in $work" >&2; exit 130' INT TERM
export repo build bundle quick steps work TANDEM_PYTHON
ran=()  # the checks recorded, in order

# --- running a check and recording its result ----------------------------------------
# A check is a function that ends with pass, fail or skip; run_check runs it.
verdict() { { echo "$1"; echo "$2"; shift 2; printf '%s\n' "$@"; } >"$VERDICT"; }
pass() { verdict passed "" "$@"; }  # pass [KEY=VALUE...]: the figures
fail() { verdict FAILED "$@"; }     # fail REASON [KEY=VALUE...]
skip() { verdict skipped "$1"; }    # skip REASON

# record NAME STATUS REASON [KEY=VALUE...]: a result decided without running.
record() {
  local name=$1
  shift
  VERDICT=$work/$name.verdict verdict "$@"
  ran+=("$name")
}

# run_check NAME SECONDS FUNCTION [ARGS...]: FUNCTION under a time limit, its
# output in WORK/NAME.log. timeout signals its whole process group (mpirun,
# the ranks, their helpers), so a hang costs SECONDS and no more. A function
# that ends without a verdict failed; the reason is its log's first error.
run_check() {
  local name=$1 limit=$2 t0=$SECONDS
  shift 2
  export VERDICT=$work/$name.verdict LOG=$work/$name.log
  rm -f "$VERDICT"
  echo "gpu-check: $name ..."
  timeout -k 10 "$limit" bash -c 'set -uo pipefail; "$@"' "$name" "$@" >"$LOG" 2>&1 </dev/null
  local status=$?
  if [ $status -eq 124 ] || [ $status -eq 137 ]; then
    verdict FAILED "timed out after $limit s"
  elif [ ! -s "$VERDICT" ]; then
    verdict FAILED "exit status $status: $(first_error "$LOG")"
  fi
  ran+=("$name")
  echo "gpu-check: $name: $(head -n 1 "$VERDICT") ($((SECONDS - t0)) s)"
}
first_error() { # first_error LOG: the line that best says what went wrong
  # tandem's programs end with "error: ..." (or "error (rank N): ..."); other
  # programs' words for it come next, the last line last.
  { grep -m1 '^error' "$1" || grep -m1 -iE 'error|fail|what\(\)|terminat|abort' "$1" || tail -n 1 "$1"; } | cut -c1-160
}
wanted() { [ ${#only[@]} -eq 0 ] || [[ " ${only[*]} " == *" $1 "* ]]; }
any_wanted() { local n; for n in "$@"; do wanted "$n" && return 0; done; return 1; }
wanted_like() { # wanted_like PREFIX: some wanted check starts with PREFIX
  [ ${#only[@]} -eq 0 ] && return 0
  local n
  for n in "${only[@]}"; do [[ $n == "$1"* ]] && return 0; done
  return 1
}
# gpu_check NAME SECONDS FUNCTION [ARGS...]: run_check where a GPU is.
gpu_check() {
  wanted "$1" || return 0
  if [ "$gpus" -eq 0 ]; then record "$1" skipped "no GPU"; else run_check "$@"; fi
}

# --- running tandem's programs -----------------------------------------------------
# prog PATH ARGS...: BUILD/PATH, through the bundle's launcher in bundle mode
# (its libraries, its GPT-2 vocabulary). mpi: the matching mpirun; no binding,
# so each rank's LibTorch threads may use every core.
prog() {
  local p=$build/$1
  shift
  if [ -n "$bundle" ]; then "$bundle/bin/bundle-run" "$p" "$@"; else "$p" "$@"; fi
}
mpi() { if [ -n "$bundle" ]; then "$bundle/bin/mpirun" --bind-to none "$@"; else mpirun --bind-to none "$@"; fi; }
# on_cpu CMD...: CMD where LibTorch sees no GPU, as the CPU references run.
on_cpu() { CUDA_VISIBLE_DEVICES='' "$@"; }
# run_check's child shells call the functions: export them (again once more are defined).
export_functions() {
  local fns
  mapfile -t fns < <(compgen -A function)
  export -f "${fns[@]}"
}
# train_rows METRICS: the training rows of a metrics.jsonl (eval rows lack "ms").
train_rows() { grep '"ms"' "$1" 2>/dev/null; }

# --- this machine ------------------------------------------------------------------
# The driver's list (names, compute capability) decides what to build; what
# LibTorch sees, asked of envcheck once it is built, decides what runs. A GPU
# the driver lists and LibTorch cannot use counts as none, and the table says
# why above it. CUDA_VISIBLE_DEVICES empty (or -1) hides every GPU, as it does
# from LibTorch.
smi_fields=index,name,compute_cap,memory.total,driver_version
smi=''
if command -v nvidia-smi >/dev/null 2>&1; then
  # compute_cap came with driver 510; older ones answer without it.
  smi=$(nvidia-smi --query-gpu=$smi_fields --format=csv,noheader 2>/dev/null) ||
    { smi_fields=index,name,memory.total,driver_version
      smi=$(nvidia-smi --query-gpu=$smi_fields --format=csv,noheader 2>/dev/null) || smi=''; }
  smi=$(grep '^[0-9]' <<<"$smi")
fi
smi_gpus=$(grep -c . <<<"$smi")
visible=${CUDA_VISIBLE_DEVICES-unset}
case $visible in '' | -1* | NoDevFiles) smi_gpus=0 ;; esac
first_gpu=0  # the GPU one-rank runs and mpi-shared-gpu use: LibTorch's cuda:0
[ "$visible" != unset ] && [ -n "$visible" ] && first_gpu=${visible%%,*}
export first_gpu

# --- build: only what runs ----------------------------------------------------------
needs() { # needs APP: some wanted check runs APP
  case $1 in
    summarize) wanted_like cpu-reference-summarize || wanted_like tiny-summarize || wanted mpi-shared-gpu ||
      wanted shard-shared-gpu || wanted shard-nccl || wanted lora-fp16 || wanted generate-greedy || wanted rouge-training ||
      wanted inference-precision || wanted packed-gpu || wanted optimizer-8bit || wanted master-weights ||
      wanted gpt2-124m ||
      wanted oom-scarce ;;
    *) wanted_like "cpu-reference-$1" || wanted_like "tiny-$1" || wanted "$1-shared-gpu" || wanted "$1-pipeline" ;;
  esac
}
# The job's own images (../shared/data beside the repository, as
# jobs/carotid-tiny.toml names them), else a small set from Debian's
# Fashion-MNIST through tests/vavae's fixture, which bundle builds lack.
breast=$repo/../shared/data/breast_ultrasound
fashion=/usr/share/datasets/fashion-mnist
# Test programs (unit_tests, mpi_tests, the image sets' maker) exist where the
# build folder has tests: not in a bundle build (env/build.sh --bundle turns them off).
# A bundle holds GoogleTest, so a bundle build here turns them on again
# (env/build.sh --bundle alone leaves them off); its programs run through the
# bundle's launcher (prog, mpi).
no_tests=''
if [ -z "$bundle" ] && grep -q '^BUILD_TESTING:BOOL=OFF' "$build/CMakeCache.txt" 2>/dev/null; then
  no_tests="$build was configured without tests (BUILD_TESTING=OFF): set TANDEM_BUILD to another folder"
elif [ -n "$bundle" ] && ! (source "$repo/env/bundle_env.sh" && tandem_bundle_has_tests "$bundle"); then
  no_tests="the bundle $bundle holds nothing to build the tests with: make it with env/bundle.sh DIR --with-tests"
fi
targets=(envcheck)
for a in "${apps[@]}"; do needs "$a" && targets+=("$a"); done
if [ -z "$no_tests" ] && [ -d "$fashion" ] && { needs vavae || { needs carotid && [ ! -f "$breast/label.xlsx" ]; }; }; then
  targets+=(vavae_fashion_mnist_split)
fi
if [ "$smi_gpus" -gt 0 ] && [ -z "$no_tests" ]; then
  wanted unit-gpu && targets+=(unit_tests)
  { wanted collectives-layouts || wanted contract-nccl; } && targets+=(mpi_tests)
  wanted loop-faults && targets+=(toy_train compare_runs)
  wanted fp16-overflow && targets+=(toy_train)
  wanted sampling-gpu && targets+=(summarize_tests)
  wanted vavae-pipeline && targets+=(vavae_vf_features)
fi

# report: the table and gpu-check.json from the verdict files, in the order
# the checks ran; exits 1 when a check failed, else 0.
report() {
  local failed=0 n
  for n in "${ran[@]}"; do [ "$(head -n 1 "$work/$n.verdict")" = FAILED ] && failed=1; done
  local kept=''
  [ $failed -eq 1 ] && kept=$work
  "$TANDEM_PYTHON" - "$work" "$smi_fields" "$smi" "${gpus:-0}" "${gpu_note:-}" "${torch_version:-}" "$repo" \
    "$((SECONDS - started))" "$kept" "$quick" "$bundle" "${only[*]:-}" "${ran[@]}" <<'PY'
import json, os, platform, subprocess, sys, time
work, fields, smi, seen, note, torch, repo, seconds, kept, quick, bundle, only = sys.argv[1:13]
names = sys.argv[13:]
def value(v):
    for kind in (int, float):
        try: return kind(v)
        except ValueError: pass
    return v
checks = []
for n in names:
    lines = open(os.path.join(work, n + ".verdict")).read().split("\n")
    figs = dict(l.split("=", 1) for l in lines[2:] if "=" in l)
    checks.append({"name": n, "status": lines[0], "reason": lines[1], "figures": figs})
print()
print(f"{'CHECK':<24} {'RESULT':<44} FIGURES")
for c in checks:
    result = c["status"] + (": " + c["reason"] if c["reason"] else "")
    result = result if len(result) <= 120 else result[:117] + "..."  # whole in gpu-check.json
    print(f"{c['name']:<24} {result:<44} {', '.join(f'{k} {v}' for k, v in c['figures'].items())}".rstrip())
    c["figures"] = {k: value(v) for k, v in c["figures"].items()}
git = lambda *a: subprocess.run(["git", "-C", repo, *a], capture_output=True, text=True).stdout.strip()
keys = [k.replace(".", "_") for k in fields.split(",")]
report = {
    "tandem": {"commit": git("rev-parse", "HEAD"), "modified": bool(git("status", "--porcelain", "-uno"))},
    "torch": torch, "gpus": [dict(zip(keys, (x.strip() for x in l.split(",")))) for l in smi.split("\n") if l],
    "gpus_libtorch_sees": int(seen), "note": note, "host": platform.node(),
    "date": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "seconds": int(seconds),
    "options": {"quick": quick == "1", "only": only.split(), "bundle": bundle}, "work_folder": kept or None,
    "checks": checks,
}
json.dump(report, open("gpu-check.json", "w"), indent=1)
PY
  echo "($((SECONDS - started)) s) gpu-check.json written to $PWD"
  if [ $failed -eq 0 ]; then
    rm -rf "$work"
    exit 0
  fi
  echo "A check FAILED. Send the table, gpu-check.json and the logs kept in $work"
  exit 1
}

echo "gpu-check: building ${targets[*]} in $build (log: $work/build.log)"
build_args=()
[ -n "$bundle" ] && build_args+=(--bundle "$bundle" "-DBUILD_TESTING=$([ -z "$no_tests" ] && echo ON || echo OFF)")
for t in "${targets[@]}"; do build_args+=(--target "$t"); done
TANDEM_BUILD=$build timeout -k 10 1500 "$repo/env/build.sh" "${build_args[@]}" >"$work/build.log" 2>&1
status=$?
if [ $status -ne 0 ]; then
  tail -n 25 "$work/build.log" >&2
  why="exit status $status: $(first_error "$work/build.log")"
  [ $status -eq 124 ] && why="timed out after 1500 s"
  record build FAILED "$why"
  report
fi
echo "gpu-check: built in $((SECONDS - started)) s"

# envcheck's report: the LibTorch tandem runs and the GPUs it sees.
export_functions
timeout -k 5 120 bash -c 'prog apps/envcheck' >"$work/machine.log" 2>&1 </dev/null
envcheck_status=$?
torch_version=$(sed -n 's/^  LibTorch *\([^ ]*\).*/\1/p' "$work/machine.log" | head -n 1)
gpus=$(sed -n 's/^GPUs visible to rank 0: \([0-9]*\)$/\1/p' "$work/machine.log" | head -n 1)
gpus=${gpus:-0}
gpu_note=''
if [ $envcheck_status -ne 0 ]; then
  gpus=0
  gpu_note="envcheck could not start: $(first_error "$work/machine.log")"
elif [ "$smi_gpus" -gt 0 ] && [ "$gpus" -eq 0 ]; then
  gpu_note="nvidia-smi lists $smi_gpus GPU(s) but LibTorch ($torch_version) sees none"
fi
# bf16 needs compute capability 8.0: the driver's figure for the GPU the runs
# use, else the one LibTorch reports (sm_XY).
cc=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader -i "$first_gpu" 2>/dev/null | head -n 1)
[[ $cc =~ ^[0-9]+\.[0-9]+$ ]] || cc=$(sed -n 's/^  cuda:0 .* sm_\([0-9]*\)\([0-9]\) .*/\1.\2/p' "$work/machine.log" | head -n 1)
export gpus cc
if [ "$gpus" -gt 0 ]; then
  echo "gpu-check: $gpus GPU(s) seen by LibTorch $torch_version; cuda:0 has compute capability ${cc:-unknown}"
else
  echo "gpu-check: no GPU here${gpu_note:+ ($gpu_note)}: the CPU half only"
fi

# --- what the tiny jobs read ---------------------------------------------------------
# GPT-2's vocabulary (summarize), and the image sets (carotid, vavae). Whatever
# is missing skips the checks that need it, saying what to install.
for a in "${apps[@]}"; do printf -v "missing_$a" ''; done
carotid_root='' carotid_labels='' vavae_root=''
if needs summarize; then
  if [ -n "$bundle" ]; then
    [ -f "${TANDEM_TOKENIZER_DIR:-$bundle/gpt2}/gpt2.tiktoken" ] || missing_summarize="the bundle has no gpt2/gpt2.tiktoken"
  elif ! timeout 180 "$repo/env/tokenizer.sh" >"$work/tokenizer.log" 2>&1; then
    missing_summarize="no GPT-2 tokenizer: env/tokenizer.sh failed (it fetches from PyPI; log: tokenizer.log)"
  fi
fi
fixture=$build/tests/vavae_fashion_mnist_split
# launched PROGRAM: a path that runs PROGRAM as prog would, for a script
# that runs it itself (in bundle mode a wrapper through the launcher).
launched() {
  [ -n "$bundle" ] || { echo "$1"; return; }
  local w
  w=$work/launched-$(basename "$1")
  printf '#!/bin/sh\nexec "%s" "%s" "$@"\n' "$bundle/bin/bundle-run" "$1" >"$w" && chmod +x "$w" && echo "$w"
}
no_fashion="no image set: needs Debian's Fashion-MNIST ($fashion: apt-get install dataset-fashion-mnist)"
[ -n "$no_tests" ] && no_fashion="no image set: its maker is a test program (${no_tests%%:*})"
if needs vavae || { needs carotid && [ ! -f "$breast/label.xlsx" ]; }; then
  if [ -d "$fashion" ] && [ -x "$fixture" ] &&
    timeout 300 "$TANDEM_PYTHON" "$repo/tests/kaggle/make_data.py" "$(launched "$fixture")" "$fashion" "$work/data" \
      >"$work/data.log" 2>&1; then
    carotid_root=$work/data/carotid/images carotid_labels=$work/data/carotid/labels.csv
    vavae_root=$work/data/vavae/data_split
  else
    [ -s "$work/data.log" ] && no_fashion="no image set: tests/kaggle/make_data.py failed (log: data.log)"
    missing_carotid=$no_fashion missing_vavae=$no_fashion
  fi
fi
if [ -f "$breast/label.xlsx" ]; then
  carotid_root=$(cd "$breast" && pwd)/images carotid_labels=$(cd "$breast" && pwd)/label.xlsx missing_carotid=''
fi
export carotid_root carotid_labels vavae_root

# --- the checks -----------------------------------------------------------------------
# tiny_job APP PREC OUT [ARGS...]: APP's tiny job for $steps steps at a constant
# learning rate (see the header), into OUT, on the device ARGS name.
tiny_job() {
  local app=$1 prec=$2 out=$3
  shift 3
  local common=(--set "train.precision=$prec" "$@")
  case $app in
    summarize)
      prog apps/summarize train --config "$repo/jobs/summarize-tiny.toml" "${common[@]}" --set "train.max_steps=$steps" \
        --set train.schedule=constant --set train.warmup_steps=0 --set train.ckpt_every=0 \
        --set "train.out_dir=$out" --set "data.cache_dir=$work/token-cache" ;;
    carotid)
      prog apps/carotid train --config "$repo/jobs/carotid-tiny.toml" "${common[@]}" --set "train.max_steps=$steps" \
        --set train.schedule=constant --set train.warmup_steps=0 --root-dir "$carotid_root" \
        --label-excel "$carotid_labels" --set "data.cache_dir=$work/image-cache" --set report.cam=true --run-dir "$out" ;;
    vavae)
      prog apps/vavae train-vae --config "$repo/jobs/vavae-tiny.toml" "${common[@]}" --set "vae.max_steps=$steps" \
        --set vae.schedule=constant --set vae.warmup_steps=0 --data-root "$vavae_root" --run-dir "$out" ;;
    *) echo "error: env/gpu-check.sh's tiny_job does not know how to run jobs/$app-tiny.toml: add $app there" >&2
      return 2 ;;
  esac
}
metrics_of() { if [ "$1" = vavae ]; then echo "$2/vae/metrics.jsonl"; else echo "$2/metrics.jsonl"; fi; }
loss_at() { # loss_at METRICS LINE|$: a training step's loss, 4 digits
  printf '%.4g' "$(train_rows "$1" | sed -n "$2"'s/.*"loss":\([^,}]*\).*/\1/p')"
}

check_cpu_envcheck() {
  on_cpu mpi -np 2 "$build/apps/envcheck" --test --set dist.device=cpu --set envcheck.max_mb=4 --set envcheck.iters=3 ||
    { fail "exit status $?: $(first_error "$LOG")"; return; }
  grep -q '^Self-test passed on every rank' "$LOG" || { fail "no 'Self-test passed on every rank' line"; return; }
  pass ranks=2 "allreduce_busbw_gbps=$(busbw "$LOG")"
}
busbw() { sed -n '/^Bandwidth: allreduce/,/average busbw/ s/^  average busbw: \([0-9.]*\).*/\1/p' "$1" | head -n 1; }

check_cpu_reference() { # check_cpu_reference APP
  local app=$1 metrics n
  on_cpu tiny_job "$app" fp32 "$work/cpu-$app" --set dist.device=cpu || { fail "exit status $?: $(first_error "$LOG")"; return; }
  metrics=$(metrics_of "$app" "$work/cpu-$app")
  n=$(train_rows "$metrics" | wc -l)
  [ "$n" -eq "$steps" ] || { fail "$metrics holds $n training steps, not $steps"; return; }
  pass "steps=$steps" "first_loss=$(loss_at "$metrics" 1)" "last_loss=$(loss_at "$metrics" '$')"
}

check_unit_gpu() {
  mkdir -p "$work/unit" && cd "$work/unit" || return
  prog tests/unit_tests --gtest_brief=1 --gtest_color=no
  local status=$? ran passed skipped gpu_skips failed
  ran=$(sed -n 's/^\[==========\] \([0-9]*\) tests\{0,1\} from .* ran.*/\1/p' "$LOG" | head -n 1)
  passed=$(sed -n 's/^\[  PASSED  \] \([0-9]*\) test.*/\1/p' "$LOG" | head -n 1)
  skipped=$(grep -c ': Skipped$' "$LOG")
  # The GPU tests skip, saying so, where LibTorch sees no GPU: on a GPU node
  # that is a failure, not a pass with fewer tests.
  gpu_skips=$(grep -A1 ': Skipped$' "$LOG" | grep -ciE 'no CUDA|no GPU')
  failed=$(grep -oE '^\[  FAILED  \] [A-Za-z0-9_/.]+' "$LOG" | cut -c14- | sort -u)
  if [ "$status" -ne 0 ] && [ -n "$failed" ]; then
    fail "$(grep -c . <<<"$failed") failed: $(head -n 3 <<<"$failed" | paste -sd' ')" "tests=$ran" "passed=$passed"
  elif [ "$status" -ne 0 ]; then
    fail "exit status $status: $(first_error "$LOG")"
  elif [ "$gpu_skips" -gt 0 ]; then
    fail "$gpu_skips GPU test(s) skipped: $(grep -A1 ': Skipped$' "$LOG" | grep -m1 -iE 'no CUDA|no GPU')"
  else
    pass "tests=$ran" "passed=$passed" "skipped=$skipped"
  fi
}

check_nccl_envcheck() {
  mpi -np "$gpus" "$build/apps/envcheck" --test --set dist.backend=nccl || { fail "exit status $?: $(first_error "$LOG")"; return; }
  grep -q '^Self-test passed on every rank' "$LOG" || { fail "no 'Self-test passed on every rank' line"; return; }
  # One rank moves no bytes between GPUs: no bus bandwidth to show.
  if [ "$gpus" -gt 1 ]; then pass "ranks=$gpus" "allreduce_busbw_gbps=$(busbw "$LOG")"; else pass ranks=1; fi
}

check_collectives() {
  mpi -np "$gpus" "$build/tests/mpi_tests" '--gtest_filter=Nccl*' --gtest_brief=1 --gtest_color=no ||
    { fail "exit status $?: $(first_error "$LOG")"; return; }
  if grep -q ': Skipped$' "$LOG"; then
    fail "a test skipped on a GPU node: $(grep -m1 -A1 ': Skipped$' "$LOG" | tail -n 1)"
    return
  fi
  pass "ranks=$gpus" "tests=$(sed -n 's/^\[  PASSED  \] \([0-9]*\) test.*/\1/p' "$LOG" | head -n 1)"
}

# gtest_cases WHAT MIN COMMAND...: a GoogleTest run whose cases all pass and
# none skips (on a GPU node a skip means LibTorch sees no GPU), MIN of them at
# least (fewer: the filter no longer finds them).
gtest_cases() {
  local what=$1 min=$2 ran
  shift 2
  "$@" --gtest_brief=1 --gtest_color=no || { fail "exit status $?: $(first_error "$LOG")"; return; }
  if grep -q ': Skipped$' "$LOG"; then
    fail "a case skipped on a GPU node: $(grep -m1 -A1 ': Skipped$' "$LOG" | tail -n 1)"
    return
  fi
  ran=$(sed -n 's/^\[  PASSED  \] \([0-9]*\) test.*/\1/p' "$LOG" | head -n 1)
  [ "${ran:-0}" -ge "$min" ] || { fail "${ran:-no} $what ran, expected $min"; return; }
  pass "tests=$ran"
}

# 2 dtypes of channels-last collectives and 4 refusals.
check_contract() { gtest_cases "NCCL contract cases" 6 mpi -np 1 "$build/tests/mpi_tests" '--gtest_filter=*Contract*/nccl*'; }

# The loop's fault paths on the GPU, as tests/e2e/train_loop.sh's nonfinite
# and oom_backoff cases run them on the CPU.
check_loop_faults() {
  local toy=("$build/tests/toy_train" --set obs.gpu_every_s=0 --set dist.device=cuda --set dist.tf32=false)
  prog tests/toy_train "${toy[@]:1}" --set train.precision=fp16 --set train.max_steps=20 --set train.ckpt_every=5 \
    --set toy.nan_from_call=8 --set train.max_bad_steps=3 --set "train.out_dir=$work/faults-nan" \
    >"$work/faults-nan.log" 2>&1
  local status=$?
  [ $status -eq 1 ] || { fail "fp16, NaN losses: exited $status, wanted 1: $(first_error "$work/faults-nan.log")"; return; }
  grep -q "step 10: loss or gradients not finite for 3 steps" "$work/faults-nan.log" ||
    { fail "fp16, NaN losses: no 'step 10: ... not finite for 3 steps' line"; return; }
  [ -f "$work/faults-nan/checkpoints/step-00000005.h5" ] || { fail "fp16, NaN losses: the step-5 checkpoint is gone"; return; }
  local common=(--set train.max_steps=8 --set train.global_batch=16 --set toy.dropout=0 --set dist.bucket_mb=0.0001)
  CUDA_VISIBLE_DEVICES=$first_gpu mpi -np 2 "${toy[@]}" "${common[@]}" --set "train.out_dir=$work/faults-ref" \
    --set toy.signal_at_call=3 >"$work/faults-ref.log" 2>&1
  status=$?
  [ $status -eq 75 ] || { fail "the preempted reference exited $status, wanted 75"; return; }
  CUDA_VISIBLE_DEVICES=$first_gpu mpi -np 2 "${toy[@]}" "${common[@]}" --set "train.out_dir=$work/faults-ref" \
    --set train.micro_batch=2 || { fail "the reference's resume: exit status $?: $(first_error "$LOG")"; return; }
  CUDA_VISIBLE_DEVICES=$first_gpu mpi -np 2 "${toy[@]}" "${common[@]}" --set "train.out_dir=$work/faults-oom" \
    --set toy.oom_from_call=5 --set toy.oom_rank=1 --set toy.oom_above=2 ||
    { fail "out of memory on rank 1: exit status $?: $(first_error "$LOG")"; return; }
  grep -q "the step is dropped and run again with micro-batch 2" "$LOG" || { fail "no back-off line"; return; }
  prog tests/compare_runs models "$work/faults-ref/models/final_model.h5" \
    "$work/faults-oom/models/final_model.h5" 1e-6 || { fail "the backed-off model is not the reference's"; return; }
  pass nan_stop=step10 oom_backoff=micro_batch2
}

# compare_losses CPU_METRICS GPU_METRICS PREC: "ok KEY=VALUE..." or why not.
compare_losses() {
  "$TANDEM_PYTHON" - "$@" <<'PY'
import json, math, sys
cpu_path, gpu_path, prec = sys.argv[1:]
# (first step, every step): see the header.
tol = {"fp32": (1e-3, 1e-3), "tf32": (1e-2, 6e-2), "fp16": (1e-2, 6e-2), "bf16": (2e-2, 1.2e-1)}[prec]
rows = lambda p: [r for r in map(json.loads, open(p)) if "ms" in r]
cpu, gpu = {r["step"]: r["loss"] for r in rows(cpu_path)}, rows(gpu_path)
rel = lambda a, b: abs(a - b) / max(abs(b), 1e-12)
pairs, skipped = [], 0
for r in gpu:
    # Step s computed its loss after s - 1 - (skips before s) updates: the
    # CPU's step with as many updates before it is its twin. The loss of a
    # step whose update was skipped is compared too, unless it is what made
    # the scaler skip (not finite).
    twin, step_skipped, skipped = r["step"] - skipped, r["skipped"] > skipped, r["skipped"]
    if not math.isfinite(r["loss"]):
        if step_skipped: continue
        sys.exit(print(f"step {r['step']}: loss {r['loss']}") or 0)
    if twin in cpu: pairs.append((r["step"], r["loss"], cpu[twin]))
if len(gpu) != len(cpu) or len(pairs) < len(cpu) / 2:
    sys.exit(print(f"{len(gpu)} GPU steps ({skipped} skipped) against {len(cpu)} CPU steps") or 0)
first = rel(gpu[0]["loss"], cpu[1]) if math.isfinite(gpu[0]["loss"]) else math.inf
worst = max(pairs, key=lambda p: rel(p[1], p[2]))
mean = rel(sum(p[1] for p in pairs), sum(p[2] for p in pairs))
figs = f"first={first:.1e} worst={rel(worst[1], worst[2]):.1e} worst_step={worst[0]} mean={mean:.1e}"
bad = rel(worst[1], worst[2]) > tol[1]
figs += f" steps={len(pairs)} skipped={skipped}"
if bad or first > tol[0]:
    print(f"losses off the CPU's beyond {tol[0]:g} first, {tol[1]:g} each: {figs}")
else:
    print(f"ok {figs}")
PY
}

check_tiny() { # check_tiny APP PREC
  local app=$1 prec=$2 ref out verdict_line
  ref=$(metrics_of "$app" "$work/cpu-$app")
  out=$work/gpu-$app-$prec
  [ -s "$ref" ] || { skip "no CPU reference (cpu-reference-$app did not pass)"; return; }
  local args=(--set dist.device=cuda --set dist.deterministic=true) run_prec=$prec
  [ "$prec" = fp32 ] && args+=(--set dist.tf32=false)
  [ "$prec" = tf32 ] && args+=(--set dist.tf32=true) && run_prec=fp32
  tiny_job "$app" "$run_prec" "$out" "${args[@]}" || { fail "exit status $?: $(first_error "$LOG")"; return; }
  verdict_line=$(compare_losses "$ref" "$(metrics_of "$app" "$out")" "$prec")
  # shellcheck disable=SC2086  # the figures are words
  case $verdict_line in ok\ *) pass ${verdict_line#ok } ;; *) fail "${verdict_line:-the comparison printed nothing}" ;; esac
}

# Two ranks on one GPU (the first visible), over MPI, in the GPU's autocast
# precision (train.precision auto): GradSync's bucket hooks, the staging of
# CUDA gradients through pinned host memory and autocast, as a one-GPU node
# with -np 2 runs them.
check_shared_gpu() {
  local n=$((quick ? 3 : 5)) out=$work/mpi-shared-gpu metrics precision rows
  CUDA_VISIBLE_DEVICES=$first_gpu mpi -np 2 "$build/apps/summarize" train --config "$repo/jobs/summarize-tiny.toml" \
    --set dist.backend=mpi --set dist.device=cuda --set "train.max_steps=$n" --set train.warmup_steps=1 \
    --set train.ckpt_every=0 --set "train.out_dir=$out" --set "data.cache_dir=$work/token-cache" ||
    { fail "exit status $?: $(first_error "$LOG")"; return; }
  precision=$(sed -n 's/.*training on 2 rank(s), cuda:0, mpi backend, \([a-z0-9]*\);.*/\1/p' "$LOG" | head -n 1)
  [ -n "$precision" ] || { fail "the log does not say 2 ranks trained on cuda:0 over MPI"; return; }
  metrics=$out/metrics.jsonl
  rows=$(train_rows "$metrics" | grep -c '"sync_wait_ms"')
  [ "$rows" -eq "$n" ] || { fail "$rows of $n steps logged a gradient sync (sync_wait_ms)"; return; }
  pass ranks=2 gpus=1 "precision=$precision" "last_loss=$(loss_at "$metrics" '$')" \
    "sync_wait_ms=$(printf '%.2f' "$(train_rows "$metrics" | sed -n '$s/.*"sync_wait_ms":\([^,}]*\).*/\1/p')")"
}

# ZeRO on a GPU: the same steps under each dist.shard, 2 ranks, either on
# one GPU over MPI (as mpi-shared-gpu runs them) or on two GPUs over NCCL. A
# sharded AdamW updates narrow views of each parameter with the fused CUDA
# kernel, which computes each element alone, so "optimizer" must log exactly
# the losses of "none"; "gradients" reduce-scatters from post-accumulate
# hooks and sums the clipping norm's squares from blocks (in float64), so it
# agrees to rounding. Small buckets make many, so tensors are cut. Under each
# setting the run is also stopped after 2 steps (a checkpoint) and resumed:
# its losses are the uninterrupted run's to the bit. A constant learning
# rate, so that the stopped run's schedule is the whole run's.
check_shard() { # check_shard mpi|nccl
  local backend=$1 n=$((quick ? 3 : 5)) shard losses=() out
  run_shard() { # run_shard OUT STEPS [ARGS...]: over MPI both ranks on the first GPU, over NCCL one each
    local dir=$1 steps=$2
    shift 2
    local job=("$build/apps/summarize" train --config "$repo/jobs/summarize-tiny.toml"
      --set "dist.backend=$backend" --set dist.device=cuda --set train.precision=fp32 --set dist.tf32=false
      --set dist.bucket_mb=0.5 --set "train.max_steps=$steps" --set train.schedule=constant
      --set train.warmup_steps=0 --set eval.rouge_samples=0 --set "train.out_dir=$dir"
      --set "data.cache_dir=$work/token-cache" "$@")
    if [ "$backend" = mpi ]; then CUDA_VISIBLE_DEVICES=$first_gpu mpi -np 2 "${job[@]}"; else mpi -np 2 "${job[@]}"; fi
  }
  for shard in none optimizer gradients; do
    out=$work/shard-$backend-$shard
    run_shard "$out" "$n" --set "dist.shard=$shard" --set train.ckpt_every=0 ||
      { fail "dist.shard=$shard: exit status $?: $(first_error "$LOG")"; return; }
    losses+=("$(train_rows "$out/metrics.jsonl" | sed -n 's/.*"loss":\([^,}]*\).*/\1/p' | xargs)")
    run_shard "$out-split" 2 --set "dist.shard=$shard" --set train.ckpt_every=2 &&
      run_shard "$out-split" "$n" --set "dist.shard=$shard" --set train.ckpt_every=0 ||
      { fail "dist.shard=$shard, stopped and resumed: exit status $?: $(first_error "$LOG")"; return; }
    local resumed
    resumed=$(train_rows "$out-split/metrics.jsonl" | sed -n 's/.*"loss":\([^,}]*\).*/\1/p' | xargs)
    [ "$resumed" = "${losses[-1]}" ] ||
      { fail "dist.shard=$shard: the resumed run's losses $resumed are not the uninterrupted ${losses[-1]}"; return; }
  done
  grep -q 'dist.shard = "gradients": this rank updates' "$LOG" || { fail "the gradients run did not shard"; return; }
  [ "${losses[0]}" = "${losses[1]}" ] || { fail "optimizer's losses ${losses[1]} are not none's ${losses[0]}"; return; }
  local worst
  worst=$(paste <(tr ' ' '\n' <<<"${losses[0]}") <(tr ' ' '\n' <<<"${losses[2]}") |
    awk '{d = $1 - $2; d = d < 0 ? -d : d; r = d / ($1 < 0 ? -$1 : $1); if (r > w) w = r} END {printf "%.2g", w}')
  awk -v w="$worst" 'BEGIN {exit !(w <= 1e-5)}' ||
    { fail "gradients' losses ${losses[2]} differ from none's ${losses[0]} by $worst relative"; return; }
  pass ranks=2 "gpus=$([ "$backend" = nccl ] && echo 2 || echo 1)" steps=$n resumed=bitwise "gradients_vs_none=$worst"
}

# LoRA as a T4 runs it (model.lora): a base made and exported on the CPU (2
# steps of the tiny job), adapters on its four projections trained on the GPU
# in fp16 with the base's matrices kept in fp16, against the same adapters
# trained on the CPU in fp32. B starts at zero, so the first loss is the
# base's in fp16 against fp32; fp16's tolerances apply. The evaluation's
# ROUGE summaries decode over the half base (autocast at the training
# precision), and export merges the adapters and writes PEFT's layout.
check_lora() {
  local n=$((quick ? 3 : 5)) base=$work/lora-base verdict_line
  local common=(--config "$repo/jobs/summarize-tiny.toml" --set "data.cache_dir=$work/token-cache"
    --set train.warmup_steps=1 --set train.ckpt_every=0)
  on_cpu prog apps/summarize train "${common[@]}" --set train.max_steps=2 --set eval.rouge_samples=0 \
    --set "train.out_dir=$work/lora-base-run" || { fail "training the base: exit status $?: $(first_error "$LOG")"; return; }
  on_cpu prog apps/summarize export --checkpoint "$work/lora-base-run/models/final_model.h5" --out "$base" ||
    { fail "exporting the base: exit status $?: $(first_error "$LOG")"; return; }
  local lora=("${common[@]}" --set "model.init_from=hf:$base" --set "train.max_steps=$n"
    --set 'model.lora.targets=["attn.c_attn", "attn.c_proj", "mlp.c_fc", "mlp.c_proj"]'
    --set eval.rouge_samples=4 --set gen.max_new_tokens=8)
  on_cpu prog apps/summarize train "${lora[@]}" --set train.precision=fp32 --set "train.out_dir=$work/lora-cpu" ||
    { fail "LoRA on the CPU: exit status $?: $(first_error "$LOG")"; return; }
  prog apps/summarize train "${lora[@]}" --set dist.device=cuda --set train.precision=fp16 \
    --set "train.out_dir=$work/lora-gpu" >"$work/lora-gpu.log" 2>&1
  local status=$?
  cat "$work/lora-gpu.log"
  [ $status -eq 0 ] || { fail "LoRA on the GPU: exit status $status: $(first_error "$work/lora-gpu.log")"; return; }
  grep -q "frozen elements (matrices in fp16)" "$work/lora-gpu.log" || { fail "the base was not kept in fp16"; return; }
  grep -q "ROUGE of 4 greedy summaries" "$work/lora-gpu.log" || { fail "no ROUGE summaries over the half base"; return; }
  prog apps/summarize export --checkpoint "$work/lora-gpu/models/final_model.h5" --out "$work/lora-export" \
    --set dist.device=cuda || { fail "export: exit status $?: $(first_error "$LOG")"; return; }
  [ -s "$work/lora-export/model.safetensors" ] && [ -s "$work/lora-export/adapter/adapter_model.safetensors" ] ||
    { fail "export wrote no merged model or adapter"; return; }
  verdict_line=$(compare_losses "$work/lora-cpu/metrics.jsonl" "$work/lora-gpu/metrics.jsonl" fp16)
  # shellcheck disable=SC2086  # the figures are words
  case $verdict_line in ok\ *) pass ${verdict_line#ok } ;; *) fail "${verdict_line:-the comparison printed nothing}" ;; esac
}

# Greedy decoding is argmax after argmax, so in fp32 (TF32 off) the GPU and
# the CPU must write the same summaries: their logits differ in the last bits
# only, which flips a token only at an exact tie. The model comes from the
# tiny job trained on the GPU in fp32 (--quick: 50 of its 150 steps): the
# CPU reference's 20 steps give "the the the ..." for every prompt, which
# compares nothing.
check_generate() {
  local model=$work/generate-model/models/final_model.h5 dev distinct
  local gen=(--config "$repo/jobs/summarize-tiny.toml" --set "data.cache_dir=$work/token-cache" --set dist.tf32=false)
  local train=(--set dist.device=cuda --set train.precision=fp32 --set "train.out_dir=$work/generate-model")
  [ "$quick" = 1 ] && gen+=(--set gen.max_new_tokens=16) && train+=(--set train.max_steps=50)
  prog apps/summarize train "${gen[@]}" "${train[@]}" ||
    { fail "training its model on the GPU: exit status $?: $(first_error "$LOG")"; return; }
  for dev in cpu cuda; do
    local where=()
    [ "$dev" = cpu ] && where=(on_cpu)
    "${where[@]}" prog apps/summarize predict "${gen[@]}" --checkpoint "$model" --set "dist.device=$dev" \
      --set dist.inference_fp32=true --set "train.out_dir=$work/generate-$dev" ||
      { fail "predict on $dev: exit status $?: $(first_error "$LOG")"; return; }
  done
  distinct=$(tail -n +2 "$work/generate-cpu/submission.csv" | cut -d, -f2- | sort -u | wc -l)
  if cmp -s "$work/generate-cpu/submission.csv" "$work/generate-cuda/submission.csv"; then
    pass "summaries=$(($(wc -l <"$work/generate-cpu/submission.csv") - 1))" "distinct=$distinct"
  else
    fail "$(differ "$work/generate-cpu/submission.csv" "$work/generate-cuda/submission.csv")"
  fi
}
differ() { # differ CPU.csv GPU.csv: how many summaries differ, and the first
  "$TANDEM_PYTHON" - "$@" <<'PY'
import csv, sys
cpu, gpu = (list(csv.reader(open(p, newline=""))) for p in sys.argv[1:])
bad = [(a, b) for a, b in zip(cpu, gpu) if a != b]
print(f"{len(bad) + abs(len(cpu) - len(gpu))} of {len(cpu) - 1} summaries differ from the CPU's"
      + (f"; first {bad[0][0][0]}: cpu {bad[0][0][1][:40]!r}, gpu {bad[0][1][1][:40]!r}" if bad else ""))
PY
}

# ROUGE during training (eval.rouge_samples) equals eval's of the same model
# on the same examples to the bit, on the GPU too: the tiny job in the GPU's
# autocast precision, scored on 32 validation examples every 50 steps
# (--quick: 25 of 50), its best model by eval_rouge1, then `eval --examples
# 32` of that model. Greedy rows leave a batch at fixed steps (generate.cpp),
# so batch sizes, kernels and rounding repeat from one generation to the next.
check_rouge_training() {
  local out=$work/rouge-training steps=$((quick ? 50 : 150)) every=$((quick ? 25 : 50)) took verdict
  local job=(--config "$repo/jobs/summarize-tiny.toml" --set "data.cache_dir=$work/token-cache" --set dist.device=cuda
    --set "train.out_dir=$out" --set eval.rouge_samples=32)
  prog apps/summarize train "${job[@]}" --set "train.max_steps=$steps" --set "train.eval_every=$every" \
    --set train.best_metric=eval_rouge1 --set train.best_mode=max ||
    { fail "training: exit status $?: $(first_error "$LOG")"; return; }
  took=$(sed -n 's/.*ROUGE of 32 greedy summaries (eval.rouge_samples): \([0-9.]*\) s.*/\1/p' "$LOG" | tail -n 1)
  prog apps/summarize eval "${job[@]}" --checkpoint "$out/models/best_model.h5" --examples 32 ||
    { fail "eval: exit status $?: $(first_error "$LOG")"; return; }
  verdict=$("$TANDEM_PYTHON" - "$out/metrics.jsonl" "$out/eval.json" <<'PY'
import json, sys
evals = [r for r in map(json.loads, open(sys.argv[1])) if "eval_rouge1" in r]
best = max(evals, key=lambda r: r["eval_rouge1"])  # the first of equals, as the trainer keeps it
ours = json.load(open(sys.argv[2]))["rouge"]
bad = [n for n in ("rouge1", "rouge2", "rougeL", "rougeLsum") if ours[n]["f1"] != best["eval_" + n]]
print("; ".join(f"{n}: training {best['eval_' + n]!r}, eval {ours[n]['f1']!r}" for n in bad) if bad
      else f"ok step={best['step']} rouge1={best['eval_rouge1']:.4f} evaluations={len(evals)}")
PY
  )
  # shellcheck disable=SC2086  # the figures are words
  case $verdict in ok\ *) pass ${verdict#ok } "rouge_s=${took:-?}" ;; *) fail "${verdict:-the comparison printed nothing}" ;; esac
}

# Inference runs a model in the precision it was trained in (issue 59): the
# tiny job trained 3 steps on the GPU in fp32 and in fp16, then generate on
# each model under train.precision = auto, under a precision named on the
# command, and under dist.inference_fp32; each run's log says which rule
# decided ("inference on cuda:N: ...").
check_inference_precision() {
  local job=(--config "$repo/jobs/summarize-tiny.toml" --set "data.cache_dir=$work/token-cache" --set dist.device=cuda)
  local trained expect
  for trained in fp32 fp16; do
    prog apps/summarize train "${job[@]}" --set train.max_steps=3 --set train.warmup_steps=0 --set train.ckpt_every=0 \
      --set "train.precision=$trained" --set "train.out_dir=$work/inference-$trained" ||
      { fail "training in $trained: exit status $?: $(first_error "$LOG")"; return; }
  done
  # MODEL, extra arguments, and the log line expected.
  local cases=(
    "fp32||fp32, the precision the model was trained in"
    "fp16||fp16, the precision the model was trained in"
    "fp32|--set train.precision=fp16|fp16: train.precision = \"fp16\""
    "fp16|--set dist.inference_fp32=true|fp32: dist.inference_fp32 is set"
  )
  local c model extra n=0
  for c in "${cases[@]}"; do
    IFS='|' read -r model extra expect <<<"$c"
    # shellcheck disable=SC2086  # extra is words
    prog apps/summarize generate "${job[@]}" --checkpoint "$work/inference-$model/models/final_model.h5" \
      --prompt "Hello" --set gen.max_new_tokens=4 $extra >"$work/inference-$n.log" 2>&1 ||
      { fail "generate ($model model $extra): exit status $?: $(first_error "$work/inference-$n.log")"; return; }
    grep -q "inference on cuda:[0-9]*: $expect" "$work/inference-$n.log" ||
      { fail "$model model $extra: no 'inference on cuda:N: $expect' in its log"; return; }
    n=$((n + 1))
  done
  pass "cases=$n"
}

# Packed rows on the GPU (issue 61): the same 16 rows a step as one padded
# micro-batch and packed into sequences, 2 a micro-batch, in fp32 with TF32
# off and dropout 0, so only summation order differs; packed computes less
# padding (metrics.jsonl's pad_fraction).
check_packed() {
  local job=(--config "$repo/jobs/summarize-tiny.toml" --set "data.cache_dir=$work/token-cache" --set dist.device=cuda
    --set dist.tf32=false --set train.precision=fp32 --set model.dropout=0 --set train.max_steps=4
    --set train.warmup_steps=1 --set train.ckpt_every=0 --set eval.rouge_samples=0 --set train.global_batch=16)
  prog apps/summarize train "${job[@]}" --set train.micro_batch=16 --set "train.out_dir=$work/packed-random" ||
    { fail "random: exit status $?: $(first_error "$LOG")"; return; }
  prog apps/summarize train "${job[@]}" --set train.micro_batch=2 --set data.batching=packed \
    --set "train.out_dir=$work/packed-packed" || { fail "packed: exit status $?: $(first_error "$LOG")"; return; }
  local pads verdict_line
  pads=$("$TANDEM_PYTHON" - "$work/packed-random/metrics.jsonl" "$work/packed-packed/metrics.jsonl" <<'PY'
import json, sys
pad = lambda p: [r["pad_fraction"] for r in map(json.loads, open(p)) if "pad_fraction" in r]
a, b = (sum(pad(p)) / max(len(pad(p)), 1) for p in sys.argv[1:])
print(f"pad_random={a:.3f} pad_packed={b:.3f}" if b < a else f"packed pads {b:.3f}, random {a:.3f}")
PY
  )
  [[ $pads == pad_random=* ]] || { fail "${pads:-no pad_fraction in metrics.jsonl}"; return; }
  verdict_line=$(compare_losses "$work/packed-random/metrics.jsonl" "$work/packed-packed/metrics.jsonl" fp32)
  # shellcheck disable=SC2086  # the figures are words
  case $verdict_line in ok\ *) pass ${verdict_line#ok } $pads ;; *) fail "${verdict_line:-the comparison printed nothing}" ;; esac
}

# compare_settings NAME:SETTINGS...: GPT-2 124M from scratch on the built-in
# dialogues, 12 steps under each setting (NAME, then its --set arguments
# separated by spaces); passes when every step's loss of each is within 2%
# of the first's, with the largest relative difference and each setting's
# median ms a step after 3 steps of warm-up, and its ratio to the first's.
compare_settings() {
  local job=(--config "$repo/jobs/summarize-tiny.toml" --set model.preset=gpt2 --set "data.cache_dir=$work/token-cache"
    --set dist.device=cuda --set train.max_steps=12 --set train.warmup_steps=2 --set train.micro_batch=16
    --set train.grad_accum=1 --set train.ckpt_every=0 --set eval.rouge_samples=0) spec name sets runs=() figures
  for spec in "$@"; do
    name=${spec%%:*}
    read -ra sets <<<"${spec#*:}"
    prog apps/summarize train "${job[@]}" "${sets[@]}" --set "train.out_dir=$work/setting-$name" ||
      { fail "$name: exit status $?: $(first_error "$LOG")"; return; }
    runs+=("$name" "$work/setting-$name/metrics.jsonl")
  done
  figures=$("$TANDEM_PYTHON" - "${runs[@]}" <<'PY'
import json, statistics, sys
names, paths = sys.argv[1::2], sys.argv[2::2]
runs = [[r for r in map(json.loads, open(p)) if "ms" in r and "loss" in r] for p in paths]
if any(len(rows) != 12 for rows in runs):
    sys.exit(print(f"bad: {[len(rows) for rows in runs]} steps logged") or 0)
worst = max(abs(b["loss"] - a["loss"]) / abs(a["loss"]) for rows in runs[1:] for a, b in zip(runs[0], rows))
ms = [statistics.median(r["ms"] for r in rows[3:]) for rows in runs]
words = [f"loss_rel_diff={worst:.2e}"] + [f"ms_{n}={m:.1f}" for n, m in zip(names, ms)]
words += [f"ratio_{n}={m / ms[0]:.2f}" for n, m in zip(names[1:], ms[1:])]
print(("ok " if worst <= 0.02 else "bad ") + " ".join(words))
PY
  )
  # shellcheck disable=SC2086  # the figures are words
  case $figures in ok\ *) pass ${figures#ok } ;; *) fail "${figures:-the comparison printed nothing}" ;; esac
}

# train.optimizer_state = "8bit" where the quantisation runs as tensor ops
# (blockwise8.cpp; the CPU has a loop of its own), in the GPU's precision.
check_optimizer_8bit() {
  compare_settings "fp32:--set train.optimizer_state=fp32" "8bit:--set train.optimizer_state=8bit"
}

# train.master_weights = "sharded" in fp16 (a T4's format), one rank under
# dist.shard = "gradients": fp16 working matrices whose gradients the loss
# scale must keep in range, moved into fp32 blocks that the scaler checks
# and the masters step from; what the CPU's bf16 cannot show.
check_master_weights() {
  local fp16="--set train.precision=fp16 --set dist.shard=gradients"
  compare_settings "replicated:$fp16" "sharded:$fp16 --set train.master_weights=sharded" \
    "sharded_8bit:$fp16 --set train.master_weights=sharded --set train.optimizer_state=8bit"
}

# GPT-2 124M (model.preset = "gpt2", as jobs/summarize.toml has it) from
# scratch on the built-in dialogues, one rank, the GPU's precision (auto);
# figures are medians over the steps after the warm-up (allocator, cuBLAS
# heuristics), peak memory the largest.
check_gpt2() {
  local n=$((quick ? 10 : 30)) warm=$((quick ? 3 : 5)) out=$work/gpt2-124m
  prog apps/summarize train --config "$repo/jobs/summarize-tiny.toml" --set model.preset=gpt2 \
    --set "train.max_steps=$n" --set train.warmup_steps=2 --set train.micro_batch=16 --set train.grad_accum=1 \
    --set train.precision=auto --set train.ckpt_every=0 --set "train.out_dir=$out" \
    --set "data.cache_dir=$work/token-cache" || { fail "exit status $?: $(first_error "$LOG")"; return; }
  local figures
  figures=$("$TANDEM_PYTHON" - "$out/metrics.jsonl" "$warm" "$n" <<'PY'
import json, math, statistics, sys
rows = [r for r in map(json.loads, open(sys.argv[1])) if "ms" in r]
if len(rows) != int(sys.argv[3]) or not all(math.isfinite(r["loss"]) for r in rows):
    sys.exit(print(f"bad: {len(rows)} steps logged, losses {[r['loss'] for r in rows][:3]}...") or 0)
late = [r for r in rows if r["step"] > int(sys.argv[2])]
med = lambda k: statistics.median(r[k] for r in late) if all(k in r for r in late) else None
fmt = lambda v, f: "none" if v is None else format(v, f)
print(f"ms_per_step={fmt(med('ms'), '.1f')} tokens_per_s={fmt(med('tokens_per_s'), '.0f')} "
      f"mfu={fmt(med('mfu'), '.3f')} peak_mem_mb={max(r['peak_mem_mb'] for r in rows):.0f} "
      f"sync_wait_ms={fmt(med('sync_wait_ms'), '.2f')}")
PY
)
  # shellcheck disable=SC2086  # the figures are words
  case $figures in bad:*) fail "${figures#bad: }" ;; *) pass $figures ;; esac
}

# A curable fp16 overflow, the loss scaler's everyday work: toy_train's loss
# times 2^11, so that at the initial scale of 2^16 the fp16 gradients of its
# hidden layer overflow; the scaler skips those steps, halving the scale each
# time, until they fit, and the run trains on to exit 0 (under fp16 only a
# non-finite loss counts towards train.max_bad_steps). The same job on the
# CPU in fp32 never skips: each GPU step is compared with the CPU step that
# had as many updates before it, within fp16's tolerance.
check_fp16_overflow() {
  local toy=(--set obs.gpu_every_s=0 --set toy.dropout=0 --set toy.loss_gain=2048 --set train.max_steps=30
    --set train.schedule=constant --set train.warmup_steps=0 --set train.ckpt_every=0)
  on_cpu prog tests/toy_train "${toy[@]}" --set dist.device=cpu --set "train.out_dir=$work/overflow-cpu" ||
    { fail "the CPU reference: exit status $?: $(first_error "$LOG")"; return; }
  prog tests/toy_train "${toy[@]}" --set dist.device=cuda --set dist.deterministic=true --set train.precision=fp16 \
    --set "train.out_dir=$work/overflow-gpu" || { fail "fp16 on the GPU: exit status $?: $(first_error "$LOG")"; return; }
  local metrics=$work/overflow-gpu/metrics.jsonl skipped scale verdict_line
  skipped=$(train_rows "$metrics" | sed -n '$s/.*"skipped":\([0-9]*\).*/\1/p')
  scale=$(train_rows "$metrics" | sed -n '$s/.*"loss_scale":\([^,}]*\).*/\1/p')
  [ "${skipped:-0}" -ge 1 ] || { fail "no step skipped: the loss gain did not overflow (last loss_scale $scale)"; return; }
  verdict_line=$(compare_losses "$work/overflow-cpu/metrics.jsonl" "$metrics" fp16)
  # shellcheck disable=SC2086  # the figures are words
  case $verdict_line in ok\ *) pass ${verdict_line#ok } "loss_scale=$scale" ;; *) fail "${verdict_line:-the comparison printed nothing}" ;; esac
}

# Sampling on the GPU (tests/summarize/test_sampling.cpp's CUDA cases): top-k,
# top-p and temperature draw each token as often as its probability says
# (40,000 draws, within five standard deviations, none outside the kept
# set), and a seed gives the same draws run to run.
check_sampling() { gtest_cases "CUDA sampling cases" 4 prog tests/summarize_tests '--gtest_filter=*Sampling*/cuda'; }

# carotid's Trainer as 2 ranks on one GPU over MPI, in the GPU's autocast
# precision: its channels-last weights and BatchNorm buffers go through the
# broadcast at start, GradSync's buckets and the buffers' pooling before each
# evaluation as CUDA tensors (tiny-carotid-* ran one rank over NCCL).
check_carotid_shared_gpu() {
  local n=$((quick ? 3 : 6)) out=$work/carotid-shared-gpu metrics rows
  CUDA_VISIBLE_DEVICES=$first_gpu mpi -np 2 "$build/apps/carotid" train --config "$repo/jobs/carotid-tiny.toml" \
    --set dist.backend=mpi --set dist.device=cuda --set "train.max_steps=$n" --set train.eval_every=3 \
    --root-dir "$carotid_root" --label-excel "$carotid_labels" --set "data.cache_dir=$work/image-cache" \
    --run-dir "$out" || { fail "exit status $?: $(first_error "$LOG")"; return; }
  grep -q 'training on 2 rank(s), cuda:0, mpi backend' "$LOG" ||
    { fail "the log does not say 2 ranks trained on cuda:0 over MPI"; return; }
  metrics=$out/metrics.jsonl
  rows=$(train_rows "$metrics" | grep -c '"sync_wait_ms"')
  [ "$rows" -eq "$n" ] || { fail "$rows of $n steps logged a gradient sync (sync_wait_ms)"; return; }
  grep -q '"eval_' "$metrics" || { fail "no evaluation row in $metrics"; return; }
  pass ranks=2 gpus=1 "last_loss=$(loss_at "$metrics" '$')"
}

# vavae's whole pipeline (`complete`) as 2 ranks on one GPU over MPI in fp16,
# shortened: the VAE aligned with stand-in foundation features (the VF loss
# and its adaptive weight under fp16 autocast), latents extracted on the GPU,
# the DiT trained (GradSync, the EMA, buffer pooling on CUDA tensors), samples
# drawn and judged. Every file the pipeline promises exists and every logged
# loss is finite.
check_vavae_pipeline() {
  local out=$work/vavae-pipeline dit_steps=$((quick ? 20 : 60))
  prog tests/vavae_vf_features "$vavae_root" "$work/vf.h5" 6 8 || { fail "the VF features fixture: exit status $?"; return; }
  CUDA_VISIBLE_DEVICES=$first_gpu mpi -np 2 "$build/apps/vavae" complete --config "$repo/jobs/vavae-tiny.toml" \
    --data-root "$vavae_root" --run-dir "$out" --set dist.backend=mpi --set dist.device=cuda \
    --set train.precision=fp16 --set "vae.vf_features=$work/vf.h5" --set vae.epochs=2 \
    --set "dit.max_steps=$dit_steps" --set dit.warmup_steps=5 --set eval.epochs=2 ||
    { fail "exit status $?: $(first_error "$LOG")"; return; }
  grep -q "aligned with 6-channel features" "$LOG" || { fail "train-vae did not say it aligns with the VF features"; return; }
  local f
  for f in vae/vae.safetensors latent_features/train.h5 latent_features/val.h5 dit/models/final_model.h5 \
    samples/grid.png evaluate/evaluate.json; do
    [ -s "$out/$f" ] || { fail "complete wrote no $f"; return; }
  done
  local bad
  bad=$(cat "$out/vae/metrics.jsonl" "$out/dit/metrics.jsonl" | grep '"loss"' | grep -ciE '"loss":(nan|-?inf)')
  [ "$bad" -eq 0 ] || { fail "$bad logged losses are not finite"; return; }
  pass ranks=2 gpus=1 precision=fp16 "vae_last_loss=$(loss_at "$out/vae/metrics.jsonl" '$')" \
    "dit_last_loss=$(loss_at "$out/dit/metrics.jsonl" '$')"
}

# Out-of-memory back-off with the memory really scarce: GPT-2 124M on one GPU
# in fp32 (TF32 off) at micro-batch 16, then 8 with 2 accumulated (the same
# global batch); then micro-batch 16 again with the caching allocator held
# (PYTORCH_CUDA_ALLOC_CONF per_process_memory_fraction, torch 2.10 and later)
# to the first's peak less 40% of what the halving saved. Its first step runs
# out of memory, is dropped and run again at micro-batch 8, and its losses are
# the second run's (fp32's tolerance: only the order of the sums differs).
check_oom_scarce() {
  local n=$((quick ? 3 : 6)) total peak16 peak8 fraction
  local job=(--config "$repo/jobs/summarize-tiny.toml" --set model.preset=gpt2 --set dist.device=cuda
    --set train.precision=fp32 --set dist.tf32=false --set dist.deterministic=true --set "train.max_steps=$n"
    --set train.schedule=constant --set train.warmup_steps=0 --set train.ckpt_every=0 --set eval.rouge_samples=0
    --set "data.cache_dir=$work/token-cache")
  prog apps/summarize train "${job[@]}" --set train.micro_batch=16 --set train.grad_accum=1 \
    --set "train.out_dir=$work/oom-16" || { fail "micro-batch 16: exit status $?: $(first_error "$LOG")"; return; }
  prog apps/summarize train "${job[@]}" --set train.micro_batch=8 --set train.grad_accum=2 \
    --set "train.out_dir=$work/oom-8" || { fail "micro-batch 8: exit status $?: $(first_error "$LOG")"; return; }
  peak_of() { train_rows "$1" | sed -n 's/.*"peak_mem_mb":\([^,}]*\).*/\1/p' | sort -g | tail -n 1; }
  peak16=$(peak_of "$work/oom-16/metrics.jsonl") peak8=$(peak_of "$work/oom-8/metrics.jsonl")
  total=$(nvidia-smi --query-gpu=memory.total --format=csv,noheader,nounits -i "$first_gpu" | head -n 1)
  fraction=$(awk -v a="$peak16" -v b="$peak8" -v t="$total" 'BEGIN {
    if (a <= 0 || b <= 0 || t <= 0 || a - b < 64) exit 1; printf "%.6f", (a - 0.4 * (a - b)) / t }') ||
    { fail "cannot place a limit between the peaks: micro-batch 16 ${peak16:-?} MB, 8 ${peak8:-?} MB of ${total:-?} MiB"; return; }
  PYTORCH_CUDA_ALLOC_CONF=per_process_memory_fraction:$fraction prog apps/summarize train "${job[@]}" \
    --set train.micro_batch=16 --set train.grad_accum=1 --set "train.out_dir=$work/oom-scarce" ||
    { fail "micro-batch 16 with the memory scarce: exit status $?: $(first_error "$LOG")"; return; }
  grep -q "the step is dropped and run again with micro-batch 8" "$LOG" ||
    { fail "no back-off to micro-batch 8 at a limit of $fraction of $total MiB (peaks $peak16 and $peak8 MB)"; return; }
  local verdict_line
  verdict_line=$(compare_losses "$work/oom-8/metrics.jsonl" "$work/oom-scarce/metrics.jsonl" fp32)
  # shellcheck disable=SC2086  # the figures are words
  case $verdict_line in
    ok\ *) pass ${verdict_line#ok } "peak16_mb=$peak16" "peak8_mb=$peak8" "fraction=$fraction" ;;
    *) fail "${verdict_line:-the comparison printed nothing}" ;;
  esac
}

# The memory plan (the first metrics row, memory_plan_mb) against the
# measured peak (the largest peak_mem_mb, LibTorch's max_memory_allocated) of
# the runs already made: each app's tiny job in fp32 and fp16, and GPT-2 124M.
# Planned within 15% of measured, as the CPU bench holds the tiny models.
check_memory_plan() {
  "$TANDEM_PYTHON" - "$work" <<'PY' >"$work/memory-plan.txt"
import glob, json, os, sys
work = sys.argv[1]
runs = sorted(glob.glob(f"{work}/gpu-*-fp32") + glob.glob(f"{work}/gpu-*-fp16")) + [f"{work}/gpt2-124m"]
rows, bad = [], []
for run in runs:
    path = next((p for p in (f"{run}/metrics.jsonl", f"{run}/vae/metrics.jsonl") if os.path.exists(p)), None)
    if not path: continue
    lines = [json.loads(l) for l in open(path)]
    plan = next((r["memory_plan_mb"] for r in lines if "memory_plan_mb" in r), None)
    peaks = [r["peak_mem_mb"] for r in lines if "peak_mem_mb" in r]
    if plan is None or not peaks: continue
    ratio = plan / max(peaks)
    rows.append(f"{os.path.basename(run)}={ratio:.2f}")
    if abs(ratio - 1) > 0.15: bad.append(f"{os.path.basename(run)} planned {plan:.0f} MB, measured {max(peaks):.0f} MB")
print(" ".join(rows))
print("; ".join(bad))
PY
  local ratios off
  ratios=$(sed -n 1p "$work/memory-plan.txt") off=$(sed -n 2p "$work/memory-plan.txt")
  [ -n "$ratios" ] || { skip "no GPU run with a memory plan and a measured peak to compare (tiny-*, gpt2-124m)"; return; }
  # shellcheck disable=SC2086  # the figures are words
  if [ -n "$off" ]; then fail "beyond 15%: $off" $ratios; else pass $ratios; fi
}

# A plain PyTorch GPT-2 124M step beside tandem's (the field's usual
# baseline): tests/bench/torch_gpt2_step.py with this machine's torch, bf16
# autocast, fused AdamW, SDPA, at the micro-batch of gpt2-124m and GPT-2's
# full context. Its MFU, not its tokens/s, compares with tandem's, whose rows
# are the dialogues' lengths.
check_torch_baseline() {
  python3 -c 'import torch; assert torch.cuda.is_available()' 2>/dev/null ||
    { skip "no python3 with a CUDA torch here"; return; }
  local steps=$((quick ? 10 : 30))
  python3 "$repo/tests/bench/torch_gpt2_step.py" --batch 16 --seq 1024 --steps "$steps" >"$work/torch-baseline.txt" ||
    { fail "exit status $?: $(first_error "$LOG")"; return; }
  # shellcheck disable=SC2046  # the figures are words
  pass $(tail -n 1 "$work/torch-baseline.txt")
}

# --- the run ----------------------------------------------------------------------------
export_functions

# The CPU half: what CI runs, and the references of the GPU half.
wanted cpu-envcheck && run_check cpu-envcheck 180 check_cpu_envcheck
for app in "${apps[@]}"; do
  wanted_like "cpu-reference-$app" || wanted_like "tiny-$app" || continue
  missing=missing_$app
  if [ -n "${!missing}" ]; then record "cpu-reference-$app" skipped "${!missing}"
  else run_check "cpu-reference-$app" 300 check_cpu_reference "$app"; fi
done

# The GPU half.
gtest_check() { # gtest_check NAME SECONDS FUNCTION: a GPU check run by a GoogleTest program
  wanted "$1" || return 0
  if [ "$gpus" -gt 0 ] && [ -n "$no_tests" ]; then record "$1" skipped "$no_tests"; else gpu_check "$@"; fi
}
bf16_ok() { [[ $cc =~ ^[0-9]+ ]] && [ "${cc%%.*}" -ge 8 ]; }
gtest_check unit-gpu 300 check_unit_gpu
gpu_check nccl-envcheck 180 check_nccl_envcheck
gtest_check collectives-layouts 180 check_collectives
gtest_check contract-nccl 120 check_contract
gtest_check loop-faults 240 check_loop_faults
gtest_check fp16-overflow 120 check_fp16_overflow
gtest_check sampling-gpu 120 check_sampling
for app in "${apps[@]}"; do
  missing=missing_$app
  for prec in "${precs[@]}"; do
    name=tiny-$app-$prec
    if ! wanted "$name"; then continue
    elif [ "$gpus" -eq 0 ]; then record "$name" skipped "no GPU"
    elif [ -n "${!missing}" ]; then record "$name" skipped "${!missing}"
    elif { [ "$prec" = bf16 ] || [ "$prec" = tf32 ]; } && ! bf16_ok; then
      record "$name" skipped "$prec needs compute capability 8.0; cuda:0 has ${cc:-an unknown one}"
    else run_check "$name" 180 check_tiny "$app" "$prec"; fi
  done
done
# app_check APP NAME SECONDS FUNCTION: a GPU check that needs APP's data.
app_check() {
  local missing=missing_$1
  shift
  wanted "$1" || return 0
  if [ "$gpus" -gt 0 ] && [ -n "${!missing}" ]; then record "$1" skipped "${!missing}"; else gpu_check "$@"; fi
}
app_check carotid carotid-shared-gpu 240 check_carotid_shared_gpu
if wanted vavae-pipeline && [ "$gpus" -gt 0 ] && [ -n "$no_tests" ]; then record vavae-pipeline skipped "$no_tests"
else app_check vavae vavae-pipeline 420 check_vavae_pipeline; fi
summarize_checks=(mpi-shared-gpu shard-shared-gpu shard-nccl oom-scarce lora-fp16 generate-greedy rouge-training
  inference-precision packed-gpu optimizer-8bit master-weights gpt2-124m)
if any_wanted "${summarize_checks[@]}"; then
  if [ "$gpus" -gt 0 ] && [ -n "$missing_summarize" ]; then
    for name in "${summarize_checks[@]}"; do
      wanted $name && record $name skipped "$missing_summarize"
    done
  else
    gpu_check mpi-shared-gpu 180 check_shared_gpu
    gpu_check shard-shared-gpu 300 check_shard mpi
    if wanted shard-nccl; then
      if [ "$gpus" -eq 1 ]; then record shard-nccl skipped "needs two GPUs (NCCL between ranks)"
      else gpu_check shard-nccl 300 check_shard nccl; fi
    fi
    gpu_check oom-scarce 300 check_oom_scarce
    gpu_check lora-fp16 240 check_lora
    gpu_check generate-greedy 300 check_generate
    gpu_check rouge-training 240 check_rouge_training
    gpu_check inference-precision 180 check_inference_precision
    gpu_check packed-gpu 180 check_packed
    gpu_check optimizer-8bit 240 check_optimizer_8bit
    gpu_check master-weights 300 check_master_weights
    gpu_check gpt2-124m 300 check_gpt2
  fi
fi
gpu_check torch-baseline 180 check_torch_baseline
gpu_check memory-plan 60 check_memory_plan
[ -n "$gpu_note" ] && echo "gpu-check: NOTE: $gpu_note (apps/envcheck in $build prints what it sees)"
report
