#!/usr/bin/env python3
"""calibration_vs_sklearn.py CAROTID_TESTS WORK: carotid's calibration
figures (apps/carotid/metrics/calibration.h) against scikit-learn's on the
same predictions: the reliability bins of
sklearn.calibration.calibration_curve(n_bins=15, strategy="uniform") (its
non-empty bins, in order), the Brier score of brier_score_loss, the loss of
log_loss, and the ECE as the bins' count-weighted mean gap (counts from the
binning calibration_curve does). Binary: P(class 1) against the label, with
probabilities on and near the bins' edges, 0 and 1. Three classes: the top
label's probability against whether it is right. All within 1e-9. And the
temperature fitted to over-confident three-class logits
(metrics/temperature.h) against scipy.optimize.minimize_scalar's minimum of
the same mean NLL, bounded, to 1e-4, with its NLL no higher.

CAROTID_TESTS' CalibrationPeer case reads WORK/NAME.csv and writes
WORK/NAME.out. Exits 77 (skipped) without numpy or scikit-learn.
"""
import os
import subprocess
import sys
from pathlib import Path

try:
    import numpy as np
    from sklearn.calibration import calibration_curve
    from sklearn.metrics import brier_score_loss, log_loss
    from scipy.optimize import minimize_scalar
    from scipy.special import logsumexp
except ImportError as e:
    print(f"SKIP: {e}")
    sys.exit(77)

BINS = 15
carotid_tests, work = sys.argv[1], Path(sys.argv[2])
work.mkdir(parents=True, exist_ok=True)
rng = np.random.default_rng(7)

# Binary: random, the 16 edges as numpy has them and a hair either side, 0 and 1.
edges = np.linspace(0.0, 1.0, BINS + 1)
p = np.concatenate([rng.random(400), edges, np.clip(edges + 1e-12, 0, 1), np.clip(edges - 1e-12, 0, 1)])
y = (rng.random(p.size) < p ** 1.5).astype(int)  # over-confident
with open(work / "binary.csv", "w") as f:
    for pi, yi in zip(p, y):
        f.write(f"{yi},{float(1.0 - pi)!r},{float(pi)!r}\n")

# Three classes: softmax of random logits.
logits = rng.normal(size=(300, 3)) * 1.5  # no probability under the 1e-7 clip
probs = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
labels = rng.integers(0, 3, size=300)
with open(work / "multiclass.csv", "w") as f:
    for row, label in zip(probs, labels):
        f.write(",".join([str(label)] + [repr(float(v)) for v in row]) + "\n")

# Over-confident logits: labels drawn at a third of the logits' scale.
true_logits = rng.normal(size=(500, 3)) * 1.2
drawn = np.array([rng.choice(3, p=np.exp(z) / np.exp(z).sum()) for z in true_logits])
over = 3.0 * true_logits
with open(work / "logits.csv", "w") as f:
    for row, label in zip(over, drawn):
        f.write(",".join([str(label)] + [repr(float(v)) for v in row]) + "\n")

run = subprocess.run([carotid_tests, "--gtest_filter=CalibrationPeer.*"],
                     env={**os.environ, "TANDEM_PEER_CALIBRATION_DIR": str(work)}, capture_output=True, text=True)
if run.returncode != 0:
    print(run.stdout, run.stderr)
    sys.exit(f"FAIL: {carotid_tests} --gtest_filter=CalibrationPeer.* exited {run.returncode}")

failures = []


def close(what, ours, theirs, tol=1e-9):
    ours, theirs = np.asarray(ours, dtype=float), np.asarray(theirs, dtype=float)
    ok = ours.shape == theirs.shape and np.allclose(ours, theirs, rtol=0, atol=tol)
    print(("  ok: " if ok else "FAIL: ") + f"{what}: tandem {ours if ours.size < 4 else ours.shape}"
          f" scikit-learn {theirs if theirs.size < 4 else theirs.shape}")
    if not ok:
        failures.append(what)


def compare(name, confidence, outcome, loss):
    lines = (work / f"{name}.out").read_text().split("\n")
    ours_loss, ours_ece, ours_brier = (float(v) for v in lines[:3])
    bins = np.array([[float(v) for v in line.split()] for line in lines[3:3 + BINS]])
    prob_true, prob_pred = calibration_curve(outcome, confidence, n_bins=BINS, strategy="uniform")
    counts = np.bincount(np.searchsorted(edges[1:-1], confidence), minlength=BINS)
    filled = bins[:, 0] > 0
    close(f"{name}: bin counts", bins[:, 0], counts)
    close(f"{name}: mean confidence per bin", bins[filled, 1], prob_pred)
    close(f"{name}: observed frequency per bin", bins[filled, 2], prob_true)
    ece = np.sum(counts[counts > 0] / confidence.size * np.abs(prob_pred - prob_true))
    close(f"{name}: ece", ours_ece, ece)
    close(f"{name}: brier", ours_brier, brier_score_loss(outcome, confidence))
    close(f"{name}: loss (negative log-likelihood)", ours_loss, loss)


# tandem's loss clips probabilities to [1e-7, 1 - 1e-7] (classifier_metrics.h).
compare("binary", p, y, log_loss(y, np.clip(p, 1e-7, 1 - 1e-7), labels=[0, 1]))
top = probs.max(axis=1)
compare("multiclass", top, (probs.argmax(axis=1) == labels).astype(int), log_loss(labels, probs, labels=[0, 1, 2]))


def nll(t):
    z = over / t
    return float(np.mean(logsumexp(z, axis=1) - z[np.arange(len(drawn)), drawn]))


theirs = minimize_scalar(nll, bounds=(0.01, 100.0), method="bounded", options={"xatol": 1e-10})
ours_t, ours_nll = (float(v) for v in (work / "logits.out").read_text().split())
close("temperature", ours_t, theirs.x, tol=1e-4)
close("NLL at the temperature", ours_nll, nll(ours_t), tol=1e-9)
if ours_nll > theirs.fun + 1e-12:
    failures.append("the fitted temperature's NLL is above scipy's minimum")
if failures:
    sys.exit(f"FAIL: {len(failures)} figure(s) differ from scikit-learn's")
print("PASS: calibration figures as scikit-learn's")
