#!/usr/bin/env python3
"""feature_distances_vs_peers.py VAVAE_TESTS WORK: vavae's FID, KID and
precision/recall (apps/vavae/metrics/feature_distances.h) against the
implementations published figures come from, on the same synthetic features
(500 real and 500 generated samples of 64 correlated features, so that both
covariances have full rank):

- FID against pytorch-fid's calculate_frechet_distance, clean-fid's
  frechet_distance (both scipy's sqrtm of the product) and torch-fidelity's
  fid_statistics_to_metric (the product's eigenvalues), each on numpy's
  np.cov of the features: within 1e-6 relative.
- KID against torch-fidelity's kid_features_to_metric with subsets of the
  whole sets (so both sides draw the same subsets): mean within 1e-6
  relative, std 0.
- Precision and recall against torch-fidelity's
  calculate_precision_recall_full (k = 3) on float32 features: the same
  counts of samples inside the other set's balls.
- FID on 10 samples of 64 features (singular covariances): finite, and
  within 1e-3 relative of torch-fidelity's (eigenvalues), which needs no
  offset; pytorch-fid's sqrtm there adds its 1e-6 offset and is not the
  reference.

VAVAE_TESTS' FeatureDistancesPeer case reads WORK/features.safetensors and
writes WORK/figures.txt. Exits 77 (skipped) without the peers.
"""
import os
import subprocess
import sys
from pathlib import Path

try:
    import numpy as np
    import torch
    from safetensors.numpy import save_file
    from pytorch_fid.fid_score import calculate_frechet_distance
    from cleanfid.fid import frechet_distance as clean_frechet_distance
    from torch_fidelity.metric_fid import fid_statistics_to_metric
    from torch_fidelity.metric_kid import kid_features_to_metric
    from torch_fidelity.metric_prc import calculate_precision_recall_full
except ImportError as e:
    print(f"SKIP: {e}")
    sys.exit(77)

vavae_tests, work = sys.argv[1], Path(sys.argv[2])
work.mkdir(parents=True, exist_ok=True)
rng = np.random.default_rng(11)
N, D = 500, 64
mix = rng.normal(size=(D, D)) / np.sqrt(D)
real = rng.normal(size=(N, D)) @ mix
fake = (rng.normal(size=(N, D)) * 1.2 + 0.3) @ mix
few_real, few_fake = real[:10].copy(), fake[:10].copy()
save_file({"real": real, "fake": fake, "real32": real.astype(np.float32), "fake32": fake.astype(np.float32),
           "few_real": few_real, "few_fake": few_fake}, str(work / "features.safetensors"))

run = subprocess.run([vavae_tests, "--gtest_filter=FeatureDistancesPeer.*"],
                     env={**os.environ, "TANDEM_PEER_FEATURES_DIR": str(work)}, capture_output=True, text=True)
if run.returncode != 0:
    print(run.stdout + run.stderr)
    sys.exit(f"FAIL: {vavae_tests} --gtest_filter=FeatureDistancesPeer.* exited {run.returncode}")
fid, kid_mean, kid_std, precision, recall, few_fid = (float(v) for v in (work / "figures.txt").read_text().split())

failures = []


def check(ok, what):
    print(("ok:   " if ok else "FAIL: ") + what)
    if not ok:
        failures.append(what)


def stats(x):
    return x.mean(axis=0), np.cov(x, rowvar=False)


def relative(a, b):
    return abs(a - b) / max(abs(b), 1e-300)


(mu1, s1), (mu2, s2) = stats(real), stats(fake)
for name, theirs in [("pytorch-fid", calculate_frechet_distance(mu1, s1, mu2, s2)),
                     ("clean-fid", clean_frechet_distance(mu1, s1, mu2, s2)),
                     ("torch-fidelity", fid_statistics_to_metric({"mu": mu1, "sigma": s1}, {"mu": mu2, "sigma": s2},
                                                                 verbose=False)["frechet_inception_distance"])]:
    check(relative(fid, theirs) < 1e-6, f"FID {fid:.10g} against {name}'s {theirs:.10g}")

kid = kid_features_to_metric(torch.from_numpy(real), torch.from_numpy(fake), kid_subsets=3, kid_subset_size=N,
                             kid_kernel="poly", kid_kernel_poly_degree=3, kid_kernel_poly_gamma=None,
                             kid_kernel_poly_coef0=1, rng_seed=0, verbose=False)
check(relative(kid_mean, kid["kernel_inception_distance_mean"]) < 1e-6,
      f"KID {kid_mean:.10g} against torch-fidelity's {kid['kernel_inception_distance_mean']:.10g}")
check(kid_std == 0.0, f"KID std {kid_std} over subsets that are the whole sets")

their_precision, their_recall = calculate_precision_recall_full(
    torch.from_numpy(fake.astype(np.float32)), torch.from_numpy(real.astype(np.float32)), neighborhood=3,
    batch_size=10000)
# torch-fidelity takes the mean in float32: the counts are compared.
check(round(precision * N) == round(their_precision * N),
      f"precision {precision} ({round(precision * N)} of {N}) against torch-fidelity's {their_precision}")
check(round(recall * N) == round(their_recall * N),
      f"recall {recall} ({round(recall * N)} of {N}) against torch-fidelity's {their_recall}")
check(0 < precision < 1 and 0 < recall < 1, "the sets overlap in part: precision and recall strictly between 0 and 1")

(m1, c1), (m2, c2) = stats(few_real), stats(few_fake)
their_few = fid_statistics_to_metric({"mu": m1, "sigma": c1}, {"mu": m2, "sigma": c2},
                                     verbose=False)["frechet_inception_distance"]
check(np.isfinite(few_fid) and relative(few_fid, their_few) < 1e-3,
      f"FID on 10 samples of {D} features (singular covariances) {few_fid:.8g} against torch-fidelity's {their_few:.8g}")

if failures:
    sys.exit(f"FAILED: {len(failures)} check(s)")
print("feature distances: FID, KID, precision and recall agree with pytorch-fid, clean-fid and torch-fidelity")
