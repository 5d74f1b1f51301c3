#!/usr/bin/env python3
"""bench_fid_features.py BUILD [N]: how long FID's Inception-v3 features take
on this machine's CPU, tandem's (apps/vavae/metrics/fid_inception.h, through
the FidInceptionPeer case of BUILD/tests/vavae_tests, 32 images a pass, as
evaluate's micro-batches, timed inside it) against pytorch-fid's InceptionV3 (the venv's
torch, the same weights, the same batches), on N random 32-pixel images
(default 256), one process each with torch's default threads. Prints each
side's images/s, the ratio, and what 10,000 images (a usual FID sample)
would take at that rate. The weights are LibTorch's seeded initialisation
(speed does not depend on them).
"""
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch
from safetensors import safe_open
from safetensors.torch import load_file, save_file
import pytorch_fid.inception as fid_inception

build = Path(sys.argv[1]).resolve()
n = int(sys.argv[2]) if len(sys.argv) > 2 else 256
tests = build / "tests" / "vavae_tests"
work = Path(tempfile.mkdtemp(prefix="bench-fid-"))
subprocess.run([tests, "--gtest_filter=FidInceptionFixture.*"], check=True, capture_output=True,
               env={**os.environ, "TANDEM_RANDOM_INCEPTION_OUT": str(work / "weights.safetensors")})
save_file({"images": torch.rand(n, 3, 32, 32)}, str(work / "images.safetensors"))

subprocess.run([tests, "--gtest_filter=FidInceptionPeer.*"], check=True, capture_output=True,
               env={**os.environ, "TANDEM_PEER_INCEPTION_DIR": str(work)})
with safe_open(str(work / "features.safetensors"), "pt") as f:
    ours = float(f.metadata()["seconds"])  # the forward passes alone, as timed below for pytorch-fid


def file_weights(*args, **kwargs):
    weights = load_file(str(work / "weights.safetensors"))
    weights["fc.weight"], weights["fc.bias"] = torch.zeros(1008, 2048), torch.zeros(1008)
    return weights


fid_inception.load_state_dict_from_url = file_weights
model = fid_inception.InceptionV3().eval()
images = load_file(str(work / "images.safetensors"))["images"]
t0 = time.perf_counter()
with torch.no_grad():
    theirs_features = torch.cat([model(chunk)[0].flatten(1) for chunk in images.split(32)])
theirs = time.perf_counter() - t0
ours_features = load_file(str(work / "features.safetensors"))["features"]
assert torch.allclose(ours_features, theirs_features, rtol=1e-4, atol=1e-6), "the features differ"

print(f"FID Inception-v3 features of {n} images of 32 px on the CPU ({torch.get_num_threads()} threads):")
for name, seconds in (("tandem", ours), ("pytorch-fid", theirs)):
    print(f"  {name:12s} {seconds:7.1f} s  {n / seconds:6.2f} images/s  10,000 images: "
          f"{10000 / (n / seconds) / 60:5.1f} min")
print(f"  tandem / pytorch-fid time: {ours / theirs:.2f} (the forward passes alone, 32 images each)")
