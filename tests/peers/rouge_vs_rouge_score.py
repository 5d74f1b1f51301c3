"""`summarize score` and `apps/rouge` against Google's rouge-score (PyPI), on
generated pairs.

Pairs mix words that share stems, case, punctuation, digits, hyphens and
newlines (rougeLsum splits on them). `summarize score` prints the mean
precision/recall/F1 over the pairs; rouge_scorer's per-pair scores are
averaged the same way, with and without the Porter stemmer, over every pair
and over five slices of 97 (where one bad pair cannot hide in a large mean).
apps/rouge, the same scorer without LibTorch, must print what `summarize
score` prints, byte for byte.
Usage: rouge_vs_rouge_score.py SUMMARIZE ROUGE WORK_DIR    (exit 77: no rouge-score)
"""
import csv
import json
import os
import random
import subprocess
import sys

try:
    from rouge_score import rouge_scorer
except ImportError as error:
    print(f"skipped: {error} (env/setup.sh --tests installs rouge-score in the venv)")
    sys.exit(77)

summarize, rouge, work = sys.argv[1:4]
os.makedirs(work, exist_ok=True)
KEYS = ["rouge1", "rouge2", "rougeL", "rougeLsum"]

rng = random.Random(7)
words = ("the model summarizes summaries summarized running runs ran runner dialogue dialogues "
         "Person said says saying meeting meetings met tomorrow today's GPT-2 3.5 1,000 "
         "e-mail co-operate naïve café über happily happiness generous generously a an of to "
         "and is are was were be been being studies studying studied").split()
punct = [",", ".", "!", "?", ";", ":", "'", "\"", "(", ")", "-", "--"]


def text():
    out = []
    for _ in range(rng.randint(0, 40)):
        w = rng.choice(words)
        r = rng.random()
        if r < 0.15:
            w = w.upper()
        elif r < 0.3:
            w = w.capitalize()
        if rng.random() < 0.2:
            w += rng.choice(punct)
        out.append(w)
        if rng.random() < 0.08:
            out.append("\n")
    return " ".join(out).replace(" \n ", "\n")


pairs = []
for i in range(2000):
    ref = text()
    # Half the predictions are edits of the reference, the rest unrelated.
    pred = " ".join(w for w in ref.split(" ") if rng.random() < 0.8) if i % 2 else text()
    pairs.append((str(i), pred, ref))


def score(subset, stemmer):
    pred_csv = os.path.join(work, "pred.csv")
    ref_csv = os.path.join(work, "ref.csv")
    for path, column in ((pred_csv, 1), (ref_csv, 2)):
        with open(path, "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(["id", "summary"])
            for row in subset:
                w.writerow([row[0], row[column]])
    flags = ["--pred", pred_csv, "--ref", ref_csv] + (["--stemmer"] if stemmer else [])
    lines = []
    for args in ([summarize, "score"] + flags, [rouge] + flags):
        run = subprocess.run(args, capture_output=True, text=True)
        if run.returncode != 0:
            sys.exit(f"{' '.join(args)} failed: {run.stderr}")
        lines.append(run.stdout.strip().splitlines()[-1])
    if lines[0] != lines[1]:
        sys.exit(f"apps/rouge and summarize score differ:\n{lines[1]}\n{lines[0]}")
    return json.loads(lines[0])


worst = 0.0
checked = 0
for stemmer in (False, True):
    scorer = rouge_scorer.RougeScorer(KEYS, use_stemmer=stemmer)
    per_pair = [scorer.score(ref, pred) for _, pred, ref in pairs]
    slices = [(0, len(pairs))] + [(s, s + 97) for s in range(0, 5 * 97, 97)]
    for start, end in slices:
        ours = score(pairs[start:end], stemmer)
        for key in KEYS:
            for field in ("precision", "recall", "fmeasure"):
                theirs = sum(getattr(p[key], field) for p in per_pair[start:end]) / (end - start)
                mine = ours[key]["f1" if field == "fmeasure" else field]
                diff = abs(theirs - mine)
                worst = max(worst, diff)
                checked += 1
                if diff > 1e-6:
                    print(f"DIFFERENT stemmer={stemmer} pairs {start}..{end} {key} {field}: "
                          f"tandem {mine:.8f} rouge-score {theirs:.8f}")

print(f"{checked} means compared over {len(pairs)} pairs, with and without the stemmer; "
      f"largest difference {worst:.2e}")
if worst > 1e-6:
    sys.exit(1)
print("summarize score and apps/rouge agree with rouge-score")
