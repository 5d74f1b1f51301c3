#!/usr/bin/env bash
# bench_early_stop.sh APP BUILD OUT: early stopping against the full schedule
# on ../shared/data, the same run (same seed) without and with patience, so
# the stopped run is the full run's first steps. Prints each run's steps,
# wall time, summed step time and best metric (value, step), then the share
# of the schedule the stopped run took. Hours on a 2-core CPU; by hand.
#   summarize  SciTLDR, the tiny GPT-2 from scratch, 8 epochs (504 steps of
#              global batch 32 on 2 ranks), ROUGE of 100 validation
#              examples every half epoch, best_metric eval_rouge1, patience 3
#   carotid    jobs/carotid-scratch.toml at 32 px, cv fold 0 of 5, 40
#              validation persons, best_metric eval_person_auc, patience 5
# PATIENCE=N sets another patience; RANKS=N (default 2) the ranks.
set -uo pipefail
app=$1 build=$(realpath "$2") out=$3
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
data=$repo/../shared/data
ranks=${RANKS:-2}
source "$repo/env/mpi_env.sh"
mkdir -p "$out"
case $app in
  summarize)
    patience=${PATIENCE:-3} metric=eval_rouge1 metrics=metrics.jsonl
    args=(train --config "$repo/jobs/summarize-tiny.toml" --set "data.train_csv=$data/scitldr/train.csv"
      --set "data.val_csv=$data/scitldr/validation.csv" --set train.max_steps=0 --set train.epochs=8
      --set train.eval_every=31 --set train.ckpt_every=62 --set train.warmup_steps=30 --set eval.rouge_samples=100
      --set gen.max_new_tokens=48 --set train.best_metric=eval_rouge1 --set train.best_mode=max --set train.seed=7
      --set "data.cache_dir=$out/token-cache")
    dir_of() { echo "--set train.out_dir=$1"; } ;;
  carotid)
    patience=${PATIENCE:-5} metric=eval_person_auc metrics=fold-0/metrics.jsonl
    args=(cv --config "$repo/jobs/carotid-scratch.toml" --fold 0 --set "data.root=$data/breast_ultrasound/images"
      --set "data.label_file=$data/breast_ultrasound/label.xlsx" --set data.image_size=32 --set data.val_ratio=0.2
      --set data.train_ratio=0.65 --set train.best_metric=eval_person_auc --set train.best_mode=max --set train.seed=7)
    dir_of() { echo "--run-dir $1"; } ;;
  *) echo "bench_early_stop.sh: APP is summarize or carotid" >&2; exit 2 ;;
esac
for run in full stopped; do
  extra=()
  [ $run = stopped ] && extra=(--set "train.early_stop_patience=$patience")
  rm -rf "${out:?}/$run"
  start=$SECONDS
  # shellcheck disable=SC2046  # dir_of gives two words
  mpiexec -n "$ranks" "$build/apps/$app" "${args[@]}" $(dir_of "$out/$run") "${extra[@]}" >"$out/$run.log" 2>&1 ||
    { echo "$run: exit status $? (log: $out/$run.log)"; exit 1; }
  echo "$((SECONDS - start))" >"$out/$run.wall"
done
python3 - "$out" "$metrics" "$metric" "$patience" <<'PY'
import json, sys
out, metrics, metric, patience = sys.argv[1:]
runs = {}
for run in ("full", "stopped"):
    rows = [json.loads(line) for line in open(f"{out}/{run}/{metrics}")]
    evals = [r for r in rows if metric in r]
    best = max(evals, key=lambda r: r[metric])
    steps = [r for r in rows if "ms" in r and "loss" in r]
    runs[run] = dict(steps=steps[-1]["step"], wall=int(open(f"{out}/{run}.wall").read()),
                     step_s=sum(r["ms"] for r in steps) / 1000, best=best[metric], at=best["step"])
    print(f"{run:8} steps {runs[run]['steps']:4}  wall {runs[run]['wall']:5} s  steps' time {runs[run]['step_s']:7.1f} s"
          f"  best {metric} {best[metric]:.4f} at step {best['step']}")
f, s = runs["full"], runs["stopped"]
print(f"patience {patience}: {s['steps']} of {f['steps']} steps ({s['steps'] / f['steps']:.0%}), "
      f"steps' time {s['step_s'] / f['step_s']:.0%}, best {s['best']:.4f} against {f['best']:.4f}")
PY
