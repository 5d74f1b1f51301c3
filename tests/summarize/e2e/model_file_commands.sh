#!/usr/bin/env bash
# model_file_commands.sh SUMMARIZE WORK: the commands that take a model file
# need only that file, and their stdout is their output alone.
#   A 2-step run of a one-layer model on the demo corpus; then generate,
#   export and eval given just the file (no model.* keys: its shape comes from
#   the config it carries); generate's stdout is the text, tokenize's one JSON
#   array per line, score's one JSON document, export's nothing; the logs are
#   on stderr.
set -uo pipefail
summarize=$1 work=$2
rm -rf "$work" && mkdir -p "$work"
fail() { echo "FAIL: $*"; for f in "$work"/*.out "$work"/*.err; do echo "--- $f"; cat "$f"; done; exit 1; }
run() {  # run NAME ARGS...: stdout to NAME.out, stderr to NAME.err
  local name=$1; shift
  "$summarize" "$@" >"$work/$name.out" 2>"$work/$name.err" || fail "$name exited with $?"
}
run train train --set train.max_steps=2 --set train.warmup_steps=0 --set train.out_dir="$work/run" \
  --set data.cache_dir="$work/cache" --set model.n_layer=1 --set dist.device=cpu
model=$work/run/models/final_model.h5
[ -s "$model" ] || fail "training wrote no $model"
grep -q "INFO" "$work/train.err" || fail "training logged nothing on stderr"
! grep -q "INFO" "$work/train.out" || fail "training logged on stdout"

run generate generate --checkpoint "$model" --prompt "Hello" --set gen.max_new_tokens=4 --set dist.device=cpu
# The continuation may hold newlines of its own; a log line would have INFO.
[ -s "$work/generate.out" ] && ! grep -q 'INFO' "$work/generate.out" ||
  fail "generate's stdout is not the continuation alone"

printf 'Hello world\nA second line\n' >"$work/lines.txt"
run tokenize tokenize --text-file "$work/lines.txt"
[ "$(grep -c '^\[[0-9, ]*\]$' "$work/tokenize.out")" = 2 ] && [ "$(wc -l <"$work/tokenize.out")" = 2 ] ||
  fail "tokenize's stdout is not one id array per line"

printf 'id,summary\n1,the cat sat\n' >"$work/pred.csv"
printf 'id,summary\n1,the cat sat down\n' >"$work/ref.csv"
run score score --pred "$work/pred.csv" --ref "$work/ref.csv"
python3 -c 'import json, sys; json.load(open(sys.argv[1]))' "$work/score.out" || fail "score's stdout is not one JSON document"

run export export --checkpoint "$model" --out "$work/hf"
[ ! -s "$work/export.out" ] || fail "export wrote to stdout"
grep -q '"n_layer": 1' "$work/hf/config.json" || fail "export did not take the file's one layer"

# generate --hf puts the model on the rank's device as a checkpoint's is: both
# go through one call, which dist.device = "cpu" shows here (on a GPU node
# the same call gives cuda:N).
grep -q "inference on cpu: fp32" "$work/generate.err" || fail "generate --checkpoint did not place the model"
run generate_hf generate --hf "$work/hf" --prompt "Hello" --set gen.max_new_tokens=4 --set dist.device=cpu
grep -q "inference on cpu: fp32" "$work/generate_hf.err" || fail "generate --hf did not place the model"
cmp -s "$work/generate.out" "$work/generate_hf.out" || fail "generate --hf continued otherwise than the checkpoint"

run eval eval --checkpoint "$model" --set train.out_dir="$work/run" --set data.cache_dir="$work/cache"
grep -q "rouge1" "$work/eval.out" || fail "eval printed no ROUGE"
echo "PASS"
