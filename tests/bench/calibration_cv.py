#!/usr/bin/env python3
"""calibration_cv.py CV_DIR [BOOTSTRAP]: docs/carotid.md's temperature
scaling table from a finished `carotid cv` folder. Every fold's
test_predictions.csv pooled (each person once, out of fold), two classes:
P(class 1) at each model's temperature (its test_report.json's) and at 1,
recovered from them (softmax(z / T) ** T, renormalised, is softmax(z)).
Image and person level (a person's probability the mean of their images'):
ECE over 15 equal-width bins as apps/carotid/metrics/calibration.h bins
them, Brier, ROC-AUC; a 95% percentile interval from BOOTSTRAP (default
2000) resamplings of the persons, with replacement, for each ECE and for
its relative change.
"""
import csv
import json
import sys
from pathlib import Path

import numpy as np
from sklearn.metrics import roc_auc_score

BINS = 15
cv_dir = Path(sys.argv[1])
draws = int(sys.argv[2]) if len(sys.argv) > 2 else 2000
edges = np.linspace(0.0, 1.0, BINS + 1)

persons, labels, after, before = [], [], [], []
# The folds' models' own reports (fold-K/ or fold-K/model-M/), not the
# cv folder's pooled one.
reports = sorted(p for p in cv_dir.glob("fold-*/**/test_report.json") if (p.parent / "test_predictions.csv").exists())
if not reports:
    sys.exit(f"{cv_dir}: no fold's test_report.json beside a test_predictions.csv")
temperatures = []
for report in reports:
    t = json.load(open(report)).get("temperature", 1.0)
    temperatures.append(t)
    for row in csv.DictReader(open(report.parent / "test_predictions.csv")):
        p = np.array([float(row["prob_0"]), float(row["prob_1"])])
        raw = p ** t / np.sum(p ** t)
        persons.append(row["person"])
        labels.append(int(row["label"]))
        after.append(p[1])
        before.append(raw[1])
persons, labels = np.array(persons), np.array(labels)
after, before = np.array(after), np.array(before)
ids = np.unique(persons)
rows_of = {pid: np.flatnonzero(persons == pid) for pid in ids}


def ece(p, y):
    b = np.searchsorted(edges[1:-1], p, side="left")
    total = 0.0
    for k in range(BINS):
        m = b == k
        if m.any():
            total += m.sum() / p.size * abs(p[m].mean() - y[m].mean())
    return total


def figures(chosen):
    img = np.concatenate([rows_of[pid] for pid in chosen])
    y_img = labels[img]
    y_per = np.array([labels[rows_of[pid][0]] for pid in chosen])
    out = {}
    for name, p in (("before", before), ("after", after)):
        p_per = np.array([p[rows_of[pid]].mean() for pid in chosen])
        out[name] = {"image_ece": ece(p[img], y_img), "person_ece": ece(p_per, y_per),
                     "image_brier": np.mean((p[img] - y_img) ** 2), "person_brier": np.mean((p_per - y_per) ** 2),
                     "image_auc": roc_auc_score(y_img, p[img]), "person_auc": roc_auc_score(y_per, p_per)}
    return out


whole = figures(ids)
rng = np.random.default_rng(0)
boot = [figures(rng.choice(ids, size=ids.size, replace=True)) for _ in range(draws)]


def interval(values):
    lo, hi = np.percentile(values, [2.5, 97.5])
    return f"[{lo:.4f}, {hi:.4f}]"


print(f"{len(reports)} models, temperatures {', '.join(f'{t:.3f}' for t in temperatures)}; "
      f"{persons.size} images of {ids.size} persons, each once; {draws} bootstrap draws of the persons")
print("| figure | T = 1 | fitted T | change |")
print("|---|---|---|---|")
for level in ("image", "person"):
    for figure in ("ece", "brier", "auc"):
        key = f"{level}_{figure}"
        b, a = whole["before"][key], whole["after"][key]
        line = f"| {level} {figure.upper() if figure != 'brier' else 'Brier'} | {b:.4f}"
        if figure == "ece":
            change = [d["after"][key] / d["before"][key] - 1 for d in boot if d["before"][key] > 0]
            line += (f" {interval([d['before'][key] for d in boot])} | {a:.4f}"
                     f" {interval([d['after'][key] for d in boot])} | {a / b - 1:+.1%} {interval(change)} |")
        else:
            line += f" | {a:.4f} | {a - b:+.4f} |"
        print(line)
