#!/usr/bin/env bash
# Runs the benches that set tandem beside the tools users run today, on this
# machine and the same torch on both sides, and writes one Markdown table of
# them to build/bench/RESULTS.md (each bench's own output beside it, in
# build/bench/*.log). Installs what is missing and builds first.
#   env/bench.sh           the full figures (an hour or more on 2 cores)
#   env/bench.sh --quick   small models, sizes and one round: minutes, a check
#                          that every bench runs rather than figures to quote
# Nothing else should run meanwhile: every figure is a ratio of two runs
# taken in turn, and load on the machine during one side skews it.
set -euo pipefail
cd "$(dirname "$0")/.."
quick=0
for flag in "$@"; do
  case $flag in
    --quick) quick=1 ;;
    *) echo "env/bench.sh: unknown flag '$flag' (have: --quick)" >&2; exit 2 ;;
  esac
done

env/setup.sh --tests --bench
env/build.sh --target summarize --target rouge --target carotid --target vavae --target bench_generate_peer --target bench_tokenizer
source env/mpi_env.sh
source env/python.sh

out=build/bench
rows=$out/results.jsonl
mkdir -p "$out"
: >"$rows"
bench=tests/bench

# Each bench in turn; one that fails or skips is named in the table's log and
# the others still run.
failed=()
run() {
  local name=$1
  shift
  echo "bench: $name"
  if ! "$@" --results "$rows" >"$out/$name.log" 2>&1; then
    failed+=("$name")
    echo "bench: $name failed or skipped; see $out/$name.log" >&2
    tail -n 5 "$out/$name.log" >&2
  fi
}

if [ $quick = 1 ]; then
  ddp=(--presets tiny --steps 3 --warmup 1 --rounds 1)
  resnet=(--steps 3 --warmup 1 --rounds 1)
  dit=(--presets tiny --steps 3 --warmup 1 --rounds 1)
  generation=(--presets tiny --rounds 1)
  tokenizer=(--mb 1)
  rouge=(--pairs 1000 --rounds 1)
else
  ddp=()
  # Their rounds differ by 10-40% on a small machine: more of them, so that
  # the best of each side is a steadier figure.
  resnet=(--rounds 3)
  dit=(--rounds 4)
  generation=()
  tokenizer=()
  rouge=()
fi

run gpt2_ddp "$TANDEM_PYTHON" $bench/bench_gpt2_ddp.py build/apps/summarize \
  --only tandem,torchrun,accelerate,torchrun+summary-head,tandem-1rank "${ddp[@]}"
run resnet_ddp "$TANDEM_PYTHON" $bench/bench_carotid_ddp.py build/apps/carotid "${resnet[@]}"
run dit_ddp "$TANDEM_PYTHON" $bench/bench_dit_ddp.py build/apps/vavae "${dit[@]}"
run generation "$TANDEM_PYTHON" $bench/bench_generate_hf.py build/tests/bench/bench_generate_peer "${generation[@]}"
run tokenizer_real build/tests/bench/bench_tokenizer --threads 1 "${tokenizer[@]}"
run tokenizer_unique build/tests/bench/bench_tokenizer --threads 1 --corpus unique "${tokenizer[@]}"
run rouge "$TANDEM_PYTHON" $bench/bench_rouge.py build/apps/rouge "${rouge[@]}"

"$TANDEM_PYTHON" $bench/results.py "$rows" "$out/RESULTS.md" "env/bench.sh $*"
echo "bench: table in $out/RESULTS.md"
if [ ${#failed[@]} -gt 0 ]; then
  echo "bench: no figures from ${failed[*]}" >&2
  exit 1
fi
