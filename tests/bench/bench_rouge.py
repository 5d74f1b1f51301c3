#!/usr/bin/env python3
"""ROUGE over 10,000 pairs: tandem's scorer against Google's rouge-score.

    bench_rouge.py ROUGE [--data ../shared/data/scitldr] [--pairs 10000] [--rounds 3]
        [--results FILE]

ROUGE is build/apps/rouge (the scorer of `summarize score`, in a program
without LibTorch or MPI; `summarize score` itself spends over a second
starting up before it scores). Passing build/apps/summarize times `summarize
score` instead.

The pairs are real: SciTLDR's one-sentence summaries (train and validation)
as references, and as predictions the lead of each paper's abstract, its first
sentence, then its first two, and so on as the rows repeat (the lead-k
baseline). Each side is timed as a user runs it, a whole command from the same
two CSVs to the four mean scores: `rouge --pred P --ref R [--stemmer]`,
and a Python process that reads the CSVs and averages
rouge_scorer's scores (rouge1, rouge2, rougeL, rougeLsum). The sides alternate;
each figure is the best of ROUNDS. The means must agree to 1e-6.
--results appends the figures to env/bench.sh's table (results.py).
Exit 77 when rouge-score is not installed (env/setup.sh --tests).
"""
import argparse
import csv
import json
import os
import re
import subprocess
import sys
import tempfile
import time

import results

try:
    import rouge_score  # noqa: F401  (the peer runs in its own process below)
except ImportError as error:
    print(f"skipped: {error} (env/setup.sh --tests installs rouge-score in the venv)")
    sys.exit(77)

KEYS = ["rouge1", "rouge2", "rougeL", "rougeLsum"]

PEER = r"""
import csv, json, sys
from rouge_score import rouge_scorer
pred_csv, ref_csv, stemmer = sys.argv[1], sys.argv[2], sys.argv[3] == "1"
keys = ["rouge1", "rouge2", "rougeL", "rougeLsum"]
read = lambda path: {row["id"]: row["summary"] for row in csv.DictReader(open(path, newline=""))}
pred, ref = read(pred_csv), read(ref_csv)
scorer = rouge_scorer.RougeScorer(keys, use_stemmer=stemmer)
sums = {k: [0.0, 0.0, 0.0] for k in keys}
for i, r in ref.items():
    s = scorer.score(r, pred[i])
    for k in keys:
        sums[k][0] += s[k].precision; sums[k][1] += s[k].recall; sums[k][2] += s[k].fmeasure
n = len(ref)
print(json.dumps({k: {"precision": v[0] / n, "recall": v[1] / n, "f1": v[2] / n} for k, v in sums.items()}))
"""


def pairs_from(data, count):
    rows = []
    for name in ("train.csv", "validation.csv"):
        with open(os.path.join(data, name), newline="") as f:
            rows += [(r["dialogue"], r["summary"]) for r in csv.DictReader(f)]
    out = []
    for i in range(count):
        abstract, summary = rows[i % len(rows)]
        sentences = re.split(r"(?<=[.!?])\s+", abstract.strip())
        lead = " ".join(sentences[: 1 + i // len(rows)])
        out.append((str(i), lead, summary))
    return out


def timed(args):
    start = time.perf_counter()
    run = subprocess.run(args, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    if run.returncode != 0:
        sys.exit(f"{' '.join(args)} failed ({run.returncode}): {run.stderr[-2000:]}")
    return seconds, json.loads(run.stdout.strip().splitlines()[-1])


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("scorer", help="build/apps/rouge (or build/apps/summarize: its score command)")
    here = os.path.dirname(os.path.abspath(__file__))
    parser.add_argument("--data", default=os.path.join(here, "..", "..", "..", "shared", "data", "scitldr"))
    parser.add_argument("--pairs", type=int, default=10000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--results", help="append the figures to env/bench.sh's table")
    a = parser.parse_args()

    pairs = pairs_from(a.data, a.pairs)
    with tempfile.TemporaryDirectory(prefix="bench_rouge_") as work:
        pred_csv, ref_csv = os.path.join(work, "pred.csv"), os.path.join(work, "ref.csv")
        for path, column in ((pred_csv, 1), (ref_csv, 2)):
            with open(path, "w", newline="") as f:
                w = csv.writer(f)
                w.writerow(["id", "summary"])
                w.writerows((p[0], p[column]) for p in pairs)

        print(f"{len(pairs)} pairs (SciTLDR summaries against the abstracts' leads), best of {a.rounds}")
        ours_cmd = [a.scorer] + (["score"] if os.path.basename(a.scorer) == "summarize" else [])
        name = " ".join(os.path.basename(part) for part in ours_cmd)
        print(f"| stemmer | {name} (s) | rouge-score (s) | ratio | largest difference of a mean |")
        print(f"|---|---|---|---|---|")
        worst_all = 0.0
        for stemmer in (False, True):
            ours_args = ours_cmd + ["--pred", pred_csv, "--ref", ref_csv] + (["--stemmer"] if stemmer else [])
            peer_args = [sys.executable, "-c", PEER, pred_csv, ref_csv, "1" if stemmer else "0"]
            ours_s, peer_s = float("inf"), float("inf")
            for _ in range(a.rounds):
                seconds, ours = timed(ours_args)
                ours_s = min(ours_s, seconds)
                seconds, theirs = timed(peer_args)
                peer_s = min(peer_s, seconds)
            worst = max(abs(ours[k][f] - theirs[k][f]) for k in KEYS for f in ("precision", "recall", "f1"))
            worst_all = max(worst_all, worst)
            print(f"| {'on' if stemmer else 'off'} | {ours_s:.2f} | {peer_s:.2f} | {peer_s / ours_s:.1f}x | {worst:.1e} |")
            results.add(a.results, "ROUGE", f"{len(pairs)} pairs, stemmer {'on' if stemmer else 'off'} "
                        f"(largest difference of a mean {worst:.0e})", f"{name}: {ours_s:.2f} s",
                        f"rouge-score: {peer_s:.2f} s", peer_s / ours_s, 20)
    if worst_all > 1e-6:
        sys.exit("the scores differ")


if __name__ == "__main__":
    main()
