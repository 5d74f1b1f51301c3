#!/usr/bin/env bash
# env/gpu-check.sh as a machine without GPU runs it, CI's half: the build of
# what it runs (a no-op in a built tree), envcheck over MPI on the CPU and the
# tiny jobs' CPU references pass; every GPU check is in the table and in
# gpu-check.json, skipped for want of a GPU; exit status 0.
#   check_cpu_half.sh REPO BUILD WORK PYTHON [SCRIPT]
# SCRIPT defaults to REPO/env/gpu-check.sh. Any GPU of the runner is hidden
# (CUDA_VISIBLE_DEVICES empty): this is the CPU half wherever CI runs it.
set -uo pipefail
repo=$1 build=$2 work=$3 python=$4 script=${5:-$1/env/gpu-check.sh}
fail() { echo "FAIL: $*"; exit 1; }
rm -rf "$work" && mkdir -p "$work" && cd "$work" || exit 1

# The apps with a tiny job, as gpu-check finds them: apps/CMakeLists.txt's
# (launch_app_names) that have a jobs/APP-tiny.toml.
apps=()
mapfile -t names < <(bash -c 'source "$1" && launch_app_names' _ "$repo/env/launch_lib.sh")
for app in "${names[@]}"; do [ -f "$repo/jobs/$app-tiny.toml" ] && apps+=("$app"); done
[[ " ${apps[*]} " == *" summarize "* ]] || fail "no tiny jobs found: apps '${names[*]}', jobs/*-tiny.toml"
cpu=(cpu-envcheck)
for app in "${apps[@]}"; do cpu+=("cpu-reference-$app"); done
gpu=(unit-gpu nccl-envcheck collectives-layouts contract-nccl)
for app in "${apps[@]}"; do for prec in fp32 tf32 fp16 bf16; do gpu+=("tiny-$app-$prec"); done; done
gpu+=(loop-faults fp16-overflow sampling-gpu mpi-shared-gpu carotid-shared-gpu vavae-pipeline shard-shared-gpu shard-nccl
  oom-scarce lora-fp16 generate-greedy rouge-training inference-precision packed-gpu optimizer-8bit master-weights
  gpt2-124m torch-baseline memory-plan)
# carotid and vavae read images made from Debian's Fashion-MNIST (carotid:
# or ../shared/data); without them their lines say so instead of passing.
optional=()
[ -d /usr/share/datasets/fashion-mnist ] || optional=(cpu-reference-vavae)
[ -d /usr/share/datasets/fashion-mnist ] || [ -f "$repo/../shared/data/breast_ultrasound/label.xlsx" ] ||
  optional+=(cpu-reference-carotid)

start=$SECONDS
out=$(CUDA_VISIBLE_DEVICES='' TANDEM_BUILD=$build "$script" --quick 2>&1)
status=$?
printf '%s\n' "$out"
echo "check_cpu_half: gpu-check took $((SECONDS - start)) s"
[ $status -eq 0 ] || fail "exit status $status"
table=$(sed -n '/^CHECK  */,$p' <<<"$out")
[ -n "$table" ] || fail "no table (a line starting CHECK, then one per check)"
for n in "${cpu[@]}"; do
  line=$(grep -E "^$n +" <<<"$table") || fail "the table has no line for $n"
  [[ " ${optional[*]} " == *" $n "* ]] && grep -qE "^$n +skipped" <<<"$line" && continue
  grep -qE "^$n +passed( |$)" <<<"$line" || fail "$n did not pass: $line"
done
for n in "${gpu[@]}"; do
  line=$(grep -E "^$n +" <<<"$table") || fail "the table has no line for $n"
  grep -qE "^$n +skipped:? +no GPU( |$)" <<<"$line" || fail "$n is not 'skipped: no GPU': $line"
done
[ -f gpu-check.json ] || fail "no gpu-check.json in the current folder"
"$python" - "${cpu[*]}" "${gpu[*]}" "${optional[*]}" <<'PY' || fail "gpu-check.json does not hold the table's checks"
import json, sys
cpu, gpu, optional = (a.split() for a in sys.argv[1:4])
report = json.load(open("gpu-check.json"))
checks = {c["name"]: c for c in report["checks"]}
assert sorted(checks) == sorted(cpu + gpu), sorted(checks)
assert all(checks[n]["status"] == "passed" or n in optional for n in cpu), [checks[n] for n in cpu]
assert all(checks[n]["status"] == "skipped" and checks[n]["reason"] == "no GPU" for n in gpu), [checks[n] for n in gpu]
assert all(isinstance(c["figures"], dict) for c in report["checks"]), "figures must be objects"
for key in ("gpus", "torch", "tandem"):
    assert key in report, f"no {key!r} in gpu-check.json"
PY
# Each GPU check beyond the tiny jobs can be asked for alone: --only refuses
# a name missing from the list it checks against (shard-shared-gpu was).
alone=$(printf '%s\n' "${gpu[@]}" | grep -v '^tiny-' | paste -sd,)
out=$(CUDA_VISIBLE_DEVICES='' TANDEM_BUILD=$build "$script" --quick --only "$alone" 2>&1) ||
  fail "--only $alone: exit status $?: $(tail -n 3 <<<"$out")"
echo PASS
